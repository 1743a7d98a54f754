//! The `dovetail` subcommands.

pub mod bench;
pub mod compare;
pub mod run;
pub mod serve;
pub mod sweep;
