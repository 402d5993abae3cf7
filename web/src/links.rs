//! The base path the router is mounted under, and every URL the pages emit, built from it.
//! A leaf: the pages, the redirects and the cookies take their paths from here only.

use crate::error::Error;

/// Where the router is mounted: `""` (at the root, as `docket web` serves it) or `/a/b` (no
/// trailing slash), the prefix every link, form action, redirect and cookie path carries.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct BasePath(String);

impl BasePath {
    /// Checks `path`: empty or `/` (the root), else `/` followed by segments of RFC 3986
    /// unreserved characters (`A-Z a-z 0-9 - . _ ~`), no empty, `.` or `..` segment; one trailing
    /// `/` is dropped.
    pub fn new(path: &str) -> Result<Self, Error> {
        let bad = |reason| Error::BasePath {
            path: path.to_owned(),
            reason,
        };
        let trimmed = path.strip_suffix('/').unwrap_or(path);
        if trimmed.is_empty() {
            return Ok(Self(String::new()));
        }
        let rest = trimmed
            .strip_prefix('/')
            .ok_or_else(|| bad("it must start with '/'"))?;
        for segment in rest.split('/') {
            if segment.is_empty() || segment == "." || segment == ".." {
                return Err(bad("empty, '.' and '..' segments are not allowed"));
            }
            let plain = segment
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'~'));
            if !plain {
                return Err(bad(
                    "only letters, digits, '-', '.', '_' and '~' are allowed in a segment",
                ));
            }
        }
        Ok(Self(trimmed.to_owned()))
    }

    /// `""` or `/a/b`.
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// The overview's URL: `/` at the root, else the base path itself (`/a/b`, which
    /// `Router::nest("/a/b", ...)` routes to the router's `/`).
    pub fn root(&self) -> String {
        if self.0.is_empty() {
            "/".to_owned()
        } else {
            self.0.clone()
        }
    }

    /// `path` (starting with `/`) under the base path.
    pub fn at(&self, path: &str) -> String {
        format!("{}{path}", self.0)
    }

    /// An execution's page.
    pub fn execution(&self, task: &str, instance: &str) -> String {
        self.at(&format!("/executions/{}/{}", seg(task), seg(instance)))
    }

    /// A task's page.
    pub fn task(&self, task: &str) -> String {
        self.at(&format!("/tasks/{}", seg(task)))
    }

    /// A work-queue task type's page.
    pub fn task_type(&self, task_type: &str) -> String {
        self.at(&format!("/queue/{}", seg(task_type)))
    }

    /// An item's page.
    pub fn item(&self, task_type: &str, item: &str) -> String {
        self.at(&format!("/queue/{}/items/{}", seg(task_type), seg(item)))
    }

    /// A worker's page.
    pub fn worker(&self, task_type: &str, worker: &str) -> String {
        self.at(&format!(
            "/queue/{}/workers/{}",
            seg(task_type),
            seg(worker)
        ))
    }

    /// The sign-in page, coming back to `next`.
    pub fn login(&self, next: &str) -> String {
        self.at(&format!("/login?next={}", seg(next)))
    }
}

/// Whether `c` is shown as an escape: control characters, and the invisible format characters
/// that reorder or hide text (bidi embeddings, overrides and isolates such as U+202E, marks,
/// zero-width characters, the BOM), with which a name could pass for another.
pub fn hidden_char(c: char) -> bool {
    c.is_control()
        || matches!(
            c,
            '\u{061C}' | '\u{180E}' | '\u{200B}'..='\u{200F}' | '\u{202A}'..='\u{202E}'
                | '\u{2060}'..='\u{206F}' | '\u{FEFF}' | '\u{FFF9}'..='\u{FFFB}'
        )
}

/// Percent-encodes one path segment (everything but RFC 3986 unreserved characters).
pub fn seg(value: &str) -> String {
    let mut out = String::with_capacity(value.len());
    for b in value.bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'~') {
            out.push(char::from(b));
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn base_paths_are_checked_and_prefix_every_url() {
        for root in ["", "/"] {
            let b = BasePath::new(root).unwrap();
            assert_eq!((b.as_str(), b.root()), ("", "/".to_owned()));
            assert_eq!(b.task("a b"), "/tasks/a%20b");
        }
        let b = BasePath::new("/ops/docket/").unwrap();
        assert_eq!(b.root(), "/ops/docket");
        assert_eq!(b.item("t", "i/1"), "/ops/docket/queue/t/items/i%2F1");
        assert_eq!(
            b.login("/ops/docket/queue"),
            "/ops/docket/login?next=%2Fops%2Fdocket%2Fqueue"
        );
        for bad in [
            "ops",
            "/ops//docket",
            "/ops/../x",
            "/a b",
            "/ops/\"x",
            "//",
            "/é",
        ] {
            assert!(BasePath::new(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn segments_are_percent_encoded() {
        assert_eq!(seg("a b/c?d#e%"), "a%20b%2Fc%3Fd%23e%25");
        assert_eq!(seg("rec-1_x.y~"), "rec-1_x.y~");
        assert_eq!(seg("é"), "%C3%A9");
    }
}
