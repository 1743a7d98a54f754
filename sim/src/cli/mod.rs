//! The `dovetail` subcommands.

pub mod bench;
pub mod bench_split;
pub mod compare;
pub mod explain;
pub mod failure;
pub mod gap_stats;
pub mod import;
pub mod merge;
pub mod run;
pub mod serve;
pub mod shrink;
pub mod sweep;
pub mod sweep_record;
