//! The bridge.
