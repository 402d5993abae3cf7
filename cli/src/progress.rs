//! Progress display (indicatif) on stderr. Hidden when stderr is not a terminal, so output that
//! is piped or captured by tests stays clean.

use indicatif::{ProgressBar, ProgressStyle};
use std::time::Duration;

/// A spinner with a message, ticking until finished or dropped.
pub fn spinner(message: impl Into<String>) -> ProgressBar {
    let bar = ProgressBar::new_spinner();
    if let Ok(style) = ProgressStyle::with_template("{spinner} {msg} [{elapsed}]") {
        bar.set_style(style);
    }
    bar.set_message(message.into());
    bar.enable_steady_tick(Duration::from_millis(100));
    bar
}

/// A bar counting `len` steps.
pub fn bar(len: u64, message: impl Into<String>) -> ProgressBar {
    let bar = ProgressBar::new(len);
    if let Ok(style) = ProgressStyle::with_template("{msg} [{bar:30}] {pos}/{len} [{elapsed}]") {
        bar.set_style(style.progress_chars("=> "));
    }
    bar.set_message(message.into());
    bar
}

/// A bar counting `len` bytes of input, with the rate and the time left; without a length
/// (standard input), a spinner with the bytes read and the rate. The message is the caller's
/// (e.g. rows read and rows per second).
pub fn bytes(len: Option<u64>, message: impl Into<String>) -> ProgressBar {
    let (bar, template) = match len {
        Some(len) => (
            ProgressBar::new(len),
            "{msg} [{bar:30}] {bytes}/{total_bytes} {binary_bytes_per_sec}, ETA {eta} [{elapsed}]",
        ),
        None => (
            ProgressBar::new_spinner(),
            "{spinner} {msg} {bytes} {binary_bytes_per_sec} [{elapsed}]",
        ),
    };
    if let Ok(style) = ProgressStyle::with_template(template) {
        bar.set_style(style.progress_chars("=> "));
    }
    bar.set_message(message.into());
    bar.enable_steady_tick(Duration::from_millis(200));
    bar
}

/// Runs `f` under a spinner showing `message`, clearing it afterwards.
pub fn while_running<T>(message: impl Into<String>, f: impl FnOnce() -> T) -> T {
    let bar = spinner(message);
    let out = f();
    bar.finish_and_clear();
    out
}
