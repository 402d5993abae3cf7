//! An execution's task data as its page shows it: a bounded prefix, re-indented in one pass
//! into a bounded writer (no tree of the document is built).

use serde::Serialize;

/// Bytes of task data shown as JSON on an execution's page; longer text is cut there.
pub const DATA_SHOWN: usize = 64 * 1024;

/// Bytes of task data read to tell and show JSON: nothing past them is parsed, whatever the
/// data's size. Data up to this size is checked as a whole to be JSON (without building it
/// in memory); longer data is shown as JSON when these first bytes read as JSON.
pub const DATA_SCANNED: usize = 256 * 1024;

/// Bytes of binary task data shown in hex.
pub const HEX_HEAD: usize = 64;

/// An execution's task data as its page shows it.
#[derive(Debug, Clone, Serialize)]
#[serde(tag = "kind", rename_all = "lowercase")]
pub enum DataView {
    /// No data (NULL).
    None,
    /// The data is JSON (or, past [`DATA_SCANNED`] bytes, its first bytes read as JSON):
    /// re-indented from the stored text, keys in stored order, cut at [`DATA_SHOWN`] bytes.
    Json {
        /// Size in bytes.
        bytes: usize,
        /// Pretty-printed (with `truncated`, the first [`DATA_SHOWN`] bytes of it, or of the
        /// first [`DATA_SCANNED`] bytes of the data).
        pretty: String,
        /// Whether `pretty` was cut.
        truncated: bool,
    },
    /// Not JSON: its size and first [`HEX_HEAD`] bytes in hex.
    Binary {
        /// Size in bytes.
        bytes: usize,
        /// The first bytes, two hex digits each, space separated.
        hex_head: String,
        /// What the bytes look like, when known (`Java-serialized object` for db-scheduler's
        /// default serializer).
        looks_like: Option<&'static str>,
    },
}

impl DataView {
    /// How `data` is shown. Reads at most [`DATA_SCANNED`] bytes of it and writes at most
    /// [`DATA_SHOWN`] bytes of text: memory and time are bounded whatever the data holds (a
    /// 20 MB document is neither parsed into a tree nor pretty-printed whole).
    pub fn of(data: Option<&[u8]>) -> Self {
        let Some(data) = data else {
            return DataView::None;
        };
        let head = &data[..data.len().min(DATA_SCANNED)];
        let complete = head.len() == data.len();
        // A whole document is checked by serde_json without building it (`IgnoredAny`); of a
        // longer one only the head is read, by the re-indenter itself.
        let valid = !complete || serde_json::from_slice::<serde::de::IgnoredAny>(data).is_ok();
        if valid {
            if let Some((pretty, cut)) = pretty_json(head, complete, DATA_SHOWN) {
                return DataView::Json {
                    bytes: data.len(),
                    pretty,
                    truncated: cut || !complete,
                };
            }
        }
        let hex_head = data
            .iter()
            .take(HEX_HEAD)
            .map(|b| format!("{b:02x}"))
            .collect::<Vec<_>>()
            .join(" ");
        let looks_like = data
            .starts_with(&docket_core::records::JAVA_SERIALIZATION_MAGIC)
            .then_some("Java-serialized object (db-scheduler's default serializer)");
        DataView::Binary {
            bytes: data.len(),
            hex_head,
            looks_like,
        }
    }
}

/// Text that stops growing at `cap` bytes: what does not fit is dropped and `full` set.
struct Bounded {
    buf: Vec<u8>,
    cap: usize,
    full: bool,
}

impl Bounded {
    fn new(cap: usize) -> Self {
        Self {
            buf: Vec::with_capacity(cap.min(4096)),
            cap,
            full: false,
        }
    }

    fn push(&mut self, bytes: &[u8]) {
        if self.full {
            return;
        }
        let room = self.cap - self.buf.len();
        if bytes.len() > room {
            self.buf.extend_from_slice(&bytes[..room]);
            self.full = true;
        } else {
            self.buf.extend_from_slice(bytes);
        }
    }

    fn line(&mut self, depth: usize) {
        self.push(b"\n");
        for _ in 0..depth {
            if self.full {
                return;
            }
            self.push(b"  ");
        }
    }

    /// The text, cut back to a whole character.
    fn into_string(self) -> String {
        match String::from_utf8(self.buf) {
            Ok(s) => s,
            Err(e) => {
                let valid = e.utf8_error().valid_up_to();
                let mut bytes = e.into_bytes();
                bytes.truncate(valid);
                String::from_utf8(bytes).unwrap_or_default()
            }
        }
    }
}

/// `input` (JSON text, or with `complete` false the first bytes of it) re-indented as
/// serde_json's pretty printer does (two spaces, `"key": value`), without building a tree:
/// one pass, written into a [`Bounded`] of `cap` bytes; strings are copied with their `\u`
/// escapes of printable characters decoded (so the page shows a bidi override as such). The
/// text and whether it was cut; `None` when `input` does not read as JSON (a stray character,
/// unbalanced brackets, a raw control character in a string, or, when `complete`, an
/// unclosed bracket or string).
fn pretty_json(input: &[u8], complete: bool, cap: usize) -> Option<(String, bool)> {
    let mut out = Bounded::new(cap);
    let mut open: Vec<u8> = Vec::new();
    let mut i = 0;
    let skip_ws = |mut j: usize| {
        while j < input.len() && matches!(input[j], b' ' | b'\t' | b'\n' | b'\r') {
            j += 1;
        }
        j
    };
    i = skip_ws(i);
    if i == input.len() {
        return None;
    }
    while i < input.len() {
        let b = input[i];
        match b {
            b' ' | b'\t' | b'\n' | b'\r' => i += 1,
            b'{' | b'[' => {
                let close = if b == b'{' { b'}' } else { b']' };
                let next = skip_ws(i + 1);
                if next < input.len() && input[next] == close {
                    out.push(&[b, close]);
                    i = next + 1;
                } else {
                    open.push(close);
                    out.push(&[b]);
                    out.line(open.len());
                    i += 1;
                }
            }
            b'}' | b']' => {
                if open.pop() != Some(b) {
                    return None;
                }
                out.line(open.len());
                out.push(&[b]);
                i += 1;
            }
            b',' => {
                if open.is_empty() {
                    return None;
                }
                out.push(b",");
                out.line(open.len());
                i += 1;
            }
            b':' => {
                if open.last() != Some(&b'}') {
                    return None;
                }
                out.push(b": ");
                i += 1;
            }
            b'"' => match copy_string(input, i, &mut out) {
                Ok(end) => i = end,
                // The head ends inside this string.
                Err(Unread::Cut) if !complete => i = input.len(),
                Err(_) => return None,
            },
            b'-' | b'+' | b'.' | b'0'..=b'9' | b'a'..=b'z' | b'A'..=b'Z' => {
                let start = i;
                while i < input.len()
                    && matches!(input[i], b'-' | b'+' | b'.' | b'0'..=b'9' | b'a'..=b'z' | b'A'..=b'Z')
                {
                    i += 1;
                }
                out.push(&input[start..i]);
            }
            _ => return None,
        }
    }
    if complete && !open.is_empty() {
        return None;
    }
    let cut = out.full;
    Some((out.into_string(), cut))
}

/// Why a string was not copied whole.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Unread {
    /// The input ends inside it.
    Cut,
    /// It is not a JSON string (a raw control character, a bad escape).
    Bad,
}

/// Copies the JSON string starting at `input[start]` (`"`) into `out`; the index past its
/// closing quote.
fn copy_string(input: &[u8], start: usize, out: &mut Bounded) -> Result<usize, Unread> {
    out.push(b"\"");
    let mut i = start + 1;
    let mut run = i;
    while i < input.len() {
        match input[i] {
            b'"' => {
                out.push(&input[run..=i]);
                return Ok(i + 1);
            }
            c if c < 0x20 => return Err(Unread::Bad),
            b'\\' => {
                out.push(&input[run..i]);
                let (text, len) = unescape(&input[i..])?;
                match text {
                    Some(c) => {
                        let mut buf = [0u8; 4];
                        out.push(c.encode_utf8(&mut buf).as_bytes());
                    }
                    None => out.push(&input[i..i + len]),
                }
                i += len;
                run = i;
            }
            _ => i += 1,
        }
    }
    out.push(&input[run..]);
    Err(Unread::Cut)
}

/// The escape at the start of `input` (`\n`, `\u00e9`, a surrogate pair): the character to
/// write instead of it, when serde_json would write it raw (a `\u` escape of a printable
/// character, `\/`), else `None` (keep the escape), and the escape's length.
fn unescape(input: &[u8]) -> Result<(Option<char>, usize), Unread> {
    let hex4 = |from: usize| -> Result<u32, Unread> {
        let digits = input.get(from..from + 4).ok_or(Unread::Cut)?;
        std::str::from_utf8(digits)
            .ok()
            .and_then(|d| u32::from_str_radix(d, 16).ok())
            .ok_or(Unread::Bad)
    };
    match input.get(1).ok_or(Unread::Cut)? {
        b'"' | b'\\' | b'b' | b'f' | b'n' | b'r' | b't' => Ok((None, 2)),
        b'/' => Ok((Some('/'), 2)),
        b'u' => {
            let first = hex4(2)?;
            let (code, len) = if (0xD800..0xDC00).contains(&first) {
                let low = match input.get(6..8) {
                    None => return Err(Unread::Cut),
                    Some(b"\\u") => Some(hex4(8)?),
                    Some(_) => None,
                };
                match low {
                    Some(low) if (0xDC00..0xE000).contains(&low) => {
                        (0x10000 + ((first - 0xD800) << 10) + (low - 0xDC00), 12)
                    }
                    _ => return Ok((None, 6)),
                }
            } else {
                (first, 6)
            };
            let c = char::from_u32(code).filter(|c| !c.is_control() && !matches!(c, '"' | '\\'));
            Ok((c, len))
        }
        _ => Err(Unread::Bad),
    }
}
