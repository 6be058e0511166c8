//! Importers: other tools' session formats converted into the optimizer's records format.
//!
//! - [`file_reads`]: shell commands that read a file, so their output becomes a file record.
//! - [`swe_agent`]: mini-swe-agent trajectories (`*.traj.json`, format `mini-swe-agent-1.1`).

pub mod file_reads;
pub mod swe_agent;
