//! `memtrace synth`: synthetic exports of a chosen size, for benchmarks.

use std::io::Write;
use std::process::ExitCode;

use crate::args::SynthArgs;
use crate::error::{io, Result};

/// Writes the flags' number of synthetic exports, one per line, to their output file.
pub fn run(args: &SynthArgs) -> Result<ExitCode> {
    let SynthArgs {
        variables,
        edges,
        sessions,
        traces,
        seed,
        ref output,
    } = *args;
    let file = std::fs::File::create(output).map_err(io(output.display()))?;
    let mut w = std::io::BufWriter::new(file);
    for i in 0..traces {
        let spec = memtrace::gen::synth::SynthSpec {
            graph_id: format!("synth-{seed}-{i}"),
            variables,
            edges,
            sessions,
            seed: seed.wrapping_add(i as u64),
        };
        memtrace::gen::synth::write_export(&spec, &mut w).map_err(io(output.display()))?;
        w.write_all(b"\n").map_err(io(output.display()))?;
    }
    w.flush().map_err(io(output.display()))?;
    Ok(ExitCode::SUCCESS)
}
