//! The showcase (for now: the store demo).
fn main() {}
