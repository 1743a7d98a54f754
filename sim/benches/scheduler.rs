//! Scheduler benchmark (written below).
fn main() {}
