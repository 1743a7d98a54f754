//! The `dovetail` subcommands.

pub mod bench;
pub mod run;
pub mod serve;
