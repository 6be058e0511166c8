//! The relay: bytes in, the same bytes out, a copy of each frame to the tap.
