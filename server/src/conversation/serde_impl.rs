//! The transcript form's tolerant spots: content given as a string or as blocks, tool results
//! whose content is a string, an array or absent, numbers written as `null`, and images whose
//! base64 data is kept when it passes the image checks (`image.rs`), else measured and dropped.

use std::fmt;

use serde::de::{self, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde::ser::{SerializeMap, Serializer};
use serde::{Deserialize, Serialize};

use super::image::MAX_BASE64_LEN;
use super::{Block, Image, ResultPart};

/// `content`: a string (one authored text block) or an array of blocks.
pub(super) fn content<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<Block>, D::Error> {
    struct V;
    impl<'de> Visitor<'de> for V {
        type Value = Vec<Block>;
        fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
            f.write_str("a string or an array of content blocks")
        }
        fn visit_str<E: de::Error>(self, s: &str) -> Result<Vec<Block>, E> {
            Ok(vec![Block::text(s)])
        }
        fn visit_string<E: de::Error>(self, s: String) -> Result<Vec<Block>, E> {
            Ok(vec![Block::text(s)])
        }
        fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Vec<Block>, A::Error> {
            let mut out = Vec::with_capacity(seq.size_hint().unwrap_or(1));
            while let Some(b) = seq.next_element()? {
                out.push(b);
            }
            Ok(out)
        }
    }
    d.deserialize_any(V)
}

/// A tool result's `content`: a string, an array of parts, or `null`.
pub(super) fn result_content<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<ResultPart>, D::Error> {
    struct V;
    impl<'de> Visitor<'de> for V {
        type Value = Vec<ResultPart>;
        fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
            f.write_str("a string, an array of content parts or null")
        }
        fn visit_unit<E: de::Error>(self) -> Result<Vec<ResultPart>, E> {
            Ok(Vec::new())
        }
        fn visit_none<E: de::Error>(self) -> Result<Vec<ResultPart>, E> {
            Ok(Vec::new())
        }
        fn visit_str<E: de::Error>(self, s: &str) -> Result<Vec<ResultPart>, E> {
            Ok(vec![ResultPart::Text {
                text: s.to_string(),
            }])
        }
        fn visit_string<E: de::Error>(self, s: String) -> Result<Vec<ResultPart>, E> {
            Ok(vec![ResultPart::Text { text: s }])
        }
        fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Vec<ResultPart>, A::Error> {
            let mut out = Vec::new();
            while let Some(p) = seq.next_element()? {
                out.push(p);
            }
            Ok(out)
        }
    }
    d.deserialize_any(V)
}

/// A tool result's content is written as a plain string when it is one text part (the
/// reference CLI's usual form), else as an array.
pub(super) fn ser_result_content<S: Serializer>(
    parts: &[ResultPart],
    s: S,
) -> Result<S::Ok, S::Error> {
    match parts {
        [ResultPart::Text { text }] => s.serialize_str(text),
        _ => parts.serialize(s),
    }
}

/// A count that may be written as `null`.
pub(super) fn u64_or_null<'de, D: Deserializer<'de>>(d: D) -> Result<u64, D::Error> {
    Ok(Option::<u64>::deserialize(d)?.unwrap_or(0))
}

impl Serialize for Image {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        struct Source<'a>(&'a Image);
        impl Serialize for Source<'_> {
            fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                let mut m = s.serialize_map(None)?;
                match &self.0.data {
                    // The API's and the reference CLI's form: a resumed session sends it again.
                    Some(data) => {
                        m.serialize_entry("type", "base64")?;
                        m.serialize_entry("media_type", &self.0.media_type)?;
                        m.serialize_entry("data", &**data)?;
                    }
                    None => {
                        m.serialize_entry("type", "omitted")?;
                        m.serialize_entry("media_type", &self.0.media_type)?;
                        if let Some(size) = self.0.size {
                            m.serialize_entry("size", &size)?;
                        }
                    }
                }
                m.end()
            }
        }
        let mut m = s.serialize_map(Some(1))?;
        m.serialize_entry("source", &Source(self))?;
        m.end()
    }
}

impl<'de> Deserialize<'de> for Image {
    /// An image whose data passes [`Image::from_base64`] is kept whole; any other (too large,
    /// of another type, not what it says it is, a URL or file source) becomes a placeholder
    /// with its size, and the model is told an image was there.
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Image, D::Error> {
        #[derive(Deserialize)]
        struct Repr {
            #[serde(default)]
            source: Option<SourceRepr>,
        }
        #[derive(Deserialize)]
        struct SourceRepr {
            #[serde(default)]
            media_type: Option<String>,
            /// base64 data: kept when it is short enough to be an image we keep, else only its
            /// length.
            #[serde(default)]
            data: Option<Base64>,
            #[serde(default)]
            size: Option<u64>,
        }
        let r = Repr::deserialize(d)?;
        let source = r.source;
        let media_type = source
            .as_ref()
            .and_then(|s| s.media_type.clone())
            .unwrap_or_else(|| "image".to_string());
        if let Some(Base64::Kept(data)) = source.as_ref().and_then(|s| s.data.as_ref())
            && let Ok(image) = Image::from_base64(&media_type, data)
        {
            return Ok(image);
        }
        let size = source
            .as_ref()
            .and_then(|s| s.size.or(s.data.as_ref().map(Base64::decoded_len)));
        Ok(Image::placeholder(media_type, size))
    }
}

/// An image's base64 text: kept when at most [`MAX_BASE64_LEN`] long, else only measured (a
/// transcript's oversized image is never held whole).
enum Base64 {
    Kept(String),
    Measured(u64),
}

impl Base64 {
    fn decoded_len(&self) -> u64 {
        match self {
            Base64::Kept(s) => {
                let padding = s.bytes().rev().take_while(|&b| b == b'=').count();
                (s.len() / 4 * 3).saturating_sub(padding) as u64
            }
            Base64::Measured(n) => *n,
        }
    }
}

impl<'de> Deserialize<'de> for Base64 {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Base64, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Base64;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("base64 text")
            }
            fn visit_str<E: de::Error>(self, s: &str) -> Result<Base64, E> {
                if s.len() <= MAX_BASE64_LEN {
                    return Ok(Base64::Kept(s.to_string()));
                }
                let padding = s.bytes().rev().take_while(|&b| b == b'=').count();
                Ok(Base64::Measured(
                    (s.len() / 4 * 3).saturating_sub(padding) as u64
                ))
            }
            fn visit_string<E: de::Error>(self, s: String) -> Result<Base64, E> {
                if s.len() <= MAX_BASE64_LEN {
                    return Ok(Base64::Kept(s));
                }
                self.visit_str(&s)
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Base64, A::Error> {
                while map.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
                Ok(Base64::Measured(0))
            }
        }
        d.deserialize_any(V)
    }
}

impl Serialize for super::StopReason {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.as_str())
    }
}

impl<'de> Deserialize<'de> for super::StopReason {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<super::StopReason, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = super::StopReason;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a stop reason")
            }
            fn visit_str<E: de::Error>(self, s: &str) -> Result<super::StopReason, E> {
                Ok(super::StopReason::parse(s))
            }
        }
        d.deserialize_str(V)
    }
}
