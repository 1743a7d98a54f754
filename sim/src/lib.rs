//! placeholder

pub mod actors;
