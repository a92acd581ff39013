//! An image in the conversation: a user's pasted or attached image sent to the model as the
//! API's `image` block, or a placeholder (its media type and size) when its bytes are not kept.
//!
//! [`Image::from_base64`] is the one gate an image passes before it is kept, from a front end
//! (ACP `image` content, the language server's `chat/send` `images`) or from a transcript:
//! - its media type is one the API takes ([`MEDIA_TYPES`]);
//! - its base64 text is measured before anything is decoded: at most [`MAX_BASE64_LEN`]
//!   characters, so the decoded image is at most [`MAX_IMAGE_BYTES`] (the API's 5 MB);
//! - it decodes as standard base64, and the bytes' magic number is the declared type's (a JPEG
//!   declared `image/png` is refused: the API would refuse it, and every later request of the
//!   session with it);
//! - its dimensions are read from the header ([`imagesize`]) for the token estimate
//!   ([`Image::tokens`]): the API's `width × height / 750` after its own downscaling (long
//!   edge at most 1,568 pixels, about 1,600 tokens at most); 2,000 (context.md section 10's
//!   figure for an image) when they cannot be read.
//!
//! A message holds at most [`MAX_IMAGES_PER_MESSAGE`] images (our choice: the API takes up to
//! 100 per request; 20 keep one message's images well inside a request's 32 MB).

use std::sync::Arc;

use base64::Engine;

/// The media types the API takes.
pub const MEDIA_TYPES: [&str; 4] = ["image/png", "image/jpeg", "image/gif", "image/webp"];

/// The API's limit on one image, decoded (5 MB).
pub const MAX_IMAGE_BYTES: usize = 5 * 1024 * 1024;

/// The longest base64 text of an image at most [`MAX_IMAGE_BYTES`] long.
pub const MAX_BASE64_LEN: usize = MAX_IMAGE_BYTES.div_ceil(3) * 4;

/// Images one message may hold.
pub const MAX_IMAGES_PER_MESSAGE: usize = 20;

/// What an image counts when its dimensions are unknown (context.md section 10).
pub const UNKNOWN_IMAGE_TOKENS: u64 = 2_000;

/// The API scales an image down so its long edge is at most this many pixels.
const MAX_EDGE: u64 = 1_568;

/// … and so it is at most about this many tokens.
const MAX_TOKENS: u64 = 1_600;

/// An image: its media type and size always; its base64 data and dimensions when kept.
#[derive(Clone, Debug, PartialEq)]
pub struct Image {
    pub media_type: String,
    /// Size of the image data in bytes, when known.
    pub size: Option<u64>,
    /// The base64 data, when kept (then it passed [`Image::from_base64`]): sent to the model
    /// and written to the transcript. `None`: a placeholder (the model is told an image was
    /// there).
    pub data: Option<Arc<str>>,
    /// Width and height in pixels, when read.
    pub dims: Option<(u32, u32)>,
}

impl Image {
    /// A placeholder: an image whose bytes are not kept.
    pub fn placeholder(media_type: impl Into<String>, size: Option<u64>) -> Image {
        Image {
            media_type: media_type.into(),
            size,
            data: None,
            dims: None,
        }
    }

    /// Checks an image given as base64 (see the module doc). The error says what is wrong in
    /// words a user can act on; the caller names the field.
    pub fn from_base64(media_type: &str, data: &str) -> Result<Image, String> {
        let media_type = media_type.trim().to_ascii_lowercase();
        let media_type = match media_type.as_str() {
            "image/jpg" => "image/jpeg".to_string(),
            _ => media_type,
        };
        if !MEDIA_TYPES.contains(&media_type.as_str()) {
            return Err(format!(
                "{media_type:?} is not an image type the model takes (PNG, JPEG, GIF or WebP)"
            ));
        }
        if data.len() > MAX_BASE64_LEN {
            return Err(format!(
                "the image is about {} MB; the model takes images of at most 5 MB",
                (data.len() / 4 * 3).div_ceil(1024 * 1024)
            ));
        }
        let bytes = base64::engine::general_purpose::STANDARD
            .decode(data)
            .map_err(|e| format!("the image data is not base64 ({e})"))?;
        if bytes.is_empty() {
            return Err("the image is empty".to_string());
        }
        let actual = sniff(&bytes);
        if actual != Some(media_type.as_str()) {
            return Err(match actual {
                Some(t) => format!("the image is declared {media_type} but its bytes are {t}"),
                None => format!(
                    "the image is declared {media_type} but its bytes are not a PNG, JPEG, GIF or WebP image"
                ),
            });
        }
        let dims = imagesize::blob_size(&bytes)
            .ok()
            .and_then(|s| Some((u32::try_from(s.width).ok()?, u32::try_from(s.height).ok()?)))
            .filter(|&(w, h)| w > 0 && h > 0);
        Ok(Image {
            media_type,
            size: Some(bytes.len() as u64),
            data: Some(Arc::from(data)),
            dims,
        })
    }

    /// The token estimate (see the module doc).
    pub fn tokens(&self) -> u64 {
        match self.dims {
            Some((w, h)) => dims_tokens(u64::from(w), u64::from(h)),
            None => UNKNOWN_IMAGE_TOKENS,
        }
    }
}

/// `width × height / 750` after the API's downscaling.
fn dims_tokens(w: u64, h: u64) -> u64 {
    let long = w.max(h);
    let (w, h) = if long > MAX_EDGE {
        ((w * MAX_EDGE / long).max(1), (h * MAX_EDGE / long).max(1))
    } else {
        (w, h)
    };
    (w * h).div_ceil(750).clamp(1, MAX_TOKENS)
}

/// The media type the bytes' magic number says, of the four the API takes.
fn sniff(b: &[u8]) -> Option<&'static str> {
    if b.starts_with(b"\x89PNG\r\n\x1a\n") {
        Some("image/png")
    } else if b.starts_with(&[0xFF, 0xD8, 0xFF]) {
        Some("image/jpeg")
    } else if b.starts_with(b"GIF87a") || b.starts_with(b"GIF89a") {
        Some("image/gif")
    } else if b.len() >= 12 && &b[..4] == b"RIFF" && &b[8..12] == b"WEBP" {
        Some("image/webp")
    } else {
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn b64(bytes: &[u8]) -> String {
        base64::engine::general_purpose::STANDARD.encode(bytes)
    }

    /// A PNG's signature and IHDR: enough for the type and the dimensions.
    fn png(w: u32, h: u32) -> Vec<u8> {
        let mut v = b"\x89PNG\r\n\x1a\n\0\0\0\x0dIHDR".to_vec();
        v.extend_from_slice(&w.to_be_bytes());
        v.extend_from_slice(&h.to_be_bytes());
        v.extend_from_slice(&[8, 6, 0, 0, 0, 0, 0, 0, 0]);
        v
    }

    #[test]
    fn a_png_is_kept_with_its_dimensions_and_tokens() {
        let data = b64(&png(300, 200));
        let i = Image::from_base64("image/png", &data).unwrap();
        assert_eq!(i.media_type, "image/png");
        assert_eq!(i.dims, Some((300, 200)));
        assert_eq!(i.data.as_deref(), Some(data.as_str()));
        assert_eq!(i.tokens(), 80, "300 × 200 / 750");
    }

    #[test]
    fn large_images_count_as_the_api_scales_them() {
        // 1,000 × 1,000: 1,334 tokens as they are.
        assert_eq!(dims_tokens(1000, 1000), 1334);
        // 4,000 × 3,000 → 1,568 × 1,176 → 2,459, capped at about 1,600.
        assert_eq!(dims_tokens(4000, 3000), MAX_TOKENS);
        // A tall strip: 100 × 10,000 → 15 × 1,568.
        assert_eq!(dims_tokens(100, 10_000), 32);
        let unknown = Image::placeholder("image/png", None);
        assert_eq!(unknown.tokens(), UNKNOWN_IMAGE_TOKENS);
    }

    #[test]
    fn other_types_mismatched_bytes_and_bad_base64_are_refused() {
        let png = b64(&png(1, 1));
        let e = Image::from_base64("image/svg+xml", &png).unwrap_err();
        assert!(e.contains("PNG, JPEG, GIF or WebP"), "{e}");
        let e = Image::from_base64("image/jpeg", &png).unwrap_err();
        assert_eq!(
            e,
            "the image is declared image/jpeg but its bytes are image/png"
        );
        let e = Image::from_base64("image/gif", &b64(b"hello world")).unwrap_err();
        assert!(e.contains("not a PNG, JPEG, GIF or WebP"), "{e}");
        let e = Image::from_base64("image/png", "not base64!").unwrap_err();
        assert!(e.contains("not base64"), "{e}");
        assert!(Image::from_base64("image/png", "").is_err());
        // Case and the common `image/jpg` alias are forgiven.
        let jpeg = b64(&[0xFF, 0xD8, 0xFF, 0xE0, 0, 16]);
        assert_eq!(
            Image::from_base64("IMAGE/JPG", &jpeg).unwrap().media_type,
            "image/jpeg"
        );
    }

    #[test]
    fn the_size_is_checked_before_decoding() {
        // One character over the limit: refused by its length, whatever it holds.
        let big = "A".repeat(MAX_BASE64_LEN + 1);
        let e = Image::from_base64("image/png", &big).unwrap_err();
        assert!(e.contains("at most 5 MB"), "{e}");
        // At the limit, a real PNG header followed by padding is accepted.
        let mut bytes = png(10, 10);
        bytes.resize(MAX_IMAGE_BYTES, 0);
        let at = b64(&bytes);
        assert!(at.len() <= MAX_BASE64_LEN);
        assert!(Image::from_base64("image/png", &at).is_ok());
    }
}
