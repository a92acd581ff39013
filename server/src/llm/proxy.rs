//! HTTP proxies, as data.
//!
//! The HTTP stack would read `HTTPS_PROXY` and friends from the process environment on its own;
//! the client turns that off and takes the proxies from its caller instead (the environment seam
//! reads them with [`Proxy::from_env`], with curl's names and precedence). So tests on 127.0.0.1
//! never go through a proxy that happens to be set, and every input is visible.
//!
//! A proxy URL may hold credentials (`http://user:pass@proxy:3128`): `Debug` shows the host only.

use std::fmt;

use super::Error;

/// The proxies to use, if any.
#[derive(Clone, Default, PartialEq, Eq)]
pub struct Proxy {
    /// For `https://` URLs.
    pub https: Option<String>,
    /// For `http://` URLs.
    pub http: Option<String>,
    /// Hosts reached directly (curl's `NO_PROXY` syntax: comma-separated hosts, domains, IPs,
    /// CIDR ranges, `*`).
    pub no_proxy: Option<String>,
}

impl Proxy {
    /// curl's variables: `HTTPS_PROXY`, `HTTP_PROXY`, `ALL_PROXY` for both when the specific one is
    /// unset, `NO_PROXY`; each also in lower case (which wins, as in curl).
    pub fn from_env(get: impl Fn(&str) -> Option<String>) -> Proxy {
        let var = |name: &str| {
            get(&name.to_ascii_lowercase())
                .or_else(|| get(name))
                .map(|v| v.trim().to_string())
                .filter(|v| !v.is_empty())
        };
        let all = var("ALL_PROXY");
        Proxy {
            https: var("HTTPS_PROXY").or_else(|| all.clone()),
            http: var("HTTP_PROXY").or(all),
            no_proxy: var("NO_PROXY"),
        }
    }

    pub(super) fn apply(
        &self,
        builder: reqwest::ClientBuilder,
    ) -> Result<reqwest::ClientBuilder, Error> {
        let mut builder = builder.no_proxy();
        let no = self
            .no_proxy
            .as_deref()
            .and_then(reqwest::NoProxy::from_string);
        if let Some(url) = &self.https {
            let p = reqwest::Proxy::https(url.as_str()).map_err(|_| {
                Error::config(format!(
                    "the HTTPS proxy `{}` is not a valid URL",
                    host(url)
                ))
            })?;
            builder = builder.proxy(p.no_proxy(no.clone()));
        }
        if let Some(url) = &self.http {
            let p = reqwest::Proxy::http(url.as_str()).map_err(|_| {
                Error::config(format!("the HTTP proxy `{}` is not a valid URL", host(url)))
            })?;
            builder = builder.proxy(p.no_proxy(no));
        }
        Ok(builder)
    }
}

/// A proxy URL without its credentials.
fn host(url: &str) -> String {
    match url.rsplit_once('@') {
        Some((_, rest)) => {
            let scheme = url.split_once("://").map_or("", |(s, _)| s);
            if scheme.is_empty() {
                rest.to_string()
            } else {
                format!("{scheme}://{rest}")
            }
        }
        None => url.to_string(),
    }
}

impl fmt::Debug for Proxy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Proxy")
            .field("https", &self.https.as_deref().map(host))
            .field("http", &self.http.as_deref().map(host))
            .field("no_proxy", &self.no_proxy)
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn curl_s_variables_and_precedence() {
        let env = |pairs: &'static [(&'static str, &'static str)]| {
            move |k: &str| {
                pairs
                    .iter()
                    .find(|(n, _)| *n == k)
                    .map(|(_, v)| v.to_string())
            }
        };
        let p = Proxy::from_env(env(&[
            ("HTTPS_PROXY", "http://upper:3128"),
            ("https_proxy", "http://lower:3128"),
            ("ALL_PROXY", "http://all:3128"),
            ("NO_PROXY", "localhost,.internal"),
        ]));
        assert_eq!(
            p.https.as_deref(),
            Some("http://lower:3128"),
            "lower case wins, as in curl"
        );
        assert_eq!(
            p.http.as_deref(),
            Some("http://all:3128"),
            "ALL_PROXY fills in"
        );
        assert_eq!(p.no_proxy.as_deref(), Some("localhost,.internal"));
        assert_eq!(
            Proxy::from_env(env(&[("HTTP_PROXY", " ")])),
            Proxy::default()
        );
    }

    #[test]
    fn credentials_in_a_proxy_url_are_not_printed() {
        let p = Proxy {
            https: Some("http://me:s3cret-pass@proxy.corp:3128".into()),
            ..Proxy::default()
        };
        let shown = format!("{p:?}");
        assert!(!shown.contains("s3cret"), "{shown}");
        assert!(shown.contains("http://proxy.corp:3128"), "{shown}");
        let e = Proxy {
            http: Some("http://me:s3cret@[::bad".into()),
            ..Proxy::default()
        }
        .apply(reqwest::Client::builder())
        .unwrap_err();
        assert!(!e.to_string().contains("s3cret"), "{e}");
    }
}
