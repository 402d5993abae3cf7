//! CSV intake (placeholder).
