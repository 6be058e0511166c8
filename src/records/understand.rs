//! Records given directly (a records file to `ctxopt build`, the MCP tool `ingest_records`)
//! get the importers' understanding of file reads: a tool output whose command reads a file
//! is that file's content.
//!
//! A tool output's command is `args.command` (or `args.cmd`) when it is a string, else its
//! `tool`. When the command reads a file (`cat`, `sed -n 'A,Bp'`, `head`, `nl`, `cat -n`,
//! `Get-Content`, … with exit code 0 or none; the importers' list, in
//! `src/import/file_reads/shell.rs`) the tool output becomes a file record of that path
//! holding every line of it seen so far, earlier reads merged, with the tool output's id,
//! timestamp and priority (an `&&` chain of reads whose output splits exactly between them gives one
//! record per file, the second and later with `#2`, `#3`, … added to the id). A command that may write a path (`sed -i`, a redirection, `mv`,
//! `cp`) forgets what was seen of it, as in the importers. Every other record is left as it
//! is, so understanding records twice changes nothing.
//!
//! A relative path is resolved against the tool output's `cwd` (the directory its command
//! ran in, when the client recorded it) and its own leading `cd`; paths are then made
//! relative to the session's folder (the first `cwd`), else to the absolute directory the
//! commands `cd` to most.

use crate::import::file_reads::shell::{file_reads, FileViews};
use crate::records::{FileRecord, Records, ToolOutput};

/// `records` with every live file read among its tool outputs turned into a file record
/// (see the module doc). The converted reads are added after the records' own files, in
/// the order of the tool outputs; the other tool outputs keep their order.
pub fn understand(mut records: Records) -> Records {
    let mut views = FileViews::default();
    // The working directory is the one the commands `cd` to most, so that a read before
    // the first `cd` gets the same path as the reads after it.
    for output in &records.tool_outputs {
        views.note_command(command_of(output));
        if let Some(cwd) = &output.cwd {
            views.note_cwd(cwd);
        }
    }
    let outputs = std::mem::take(&mut records.tool_outputs);
    for output in outputs {
        let command = command_of(&output);
        let mut reads = file_reads(command, &output.output, output.exit_code);
        if let Some(cwd) = &output.cwd {
            reads.iter_mut().for_each(|read| read.ran_in(cwd));
        }
        if reads.is_empty() {
            views.forget_written(command);
            records.tool_outputs.push(output);
            continue;
        }
        for (k, read) in reads.iter().enumerate() {
            let (path, content) = views.add(read);
            let mut common = output.common.clone();
            // A chain of reads gives one record per file: the second and later get ids of
            // their own.
            if k > 0 {
                common.id = common.id.map(|id| format!("{id}#{}", k + 1));
            }
            records.files.push(FileRecord {
                common,
                path,
                content,
            });
        }
    }
    records
}

/// The command line a tool output ran: `args.command` or `args.cmd` when it is a string,
/// else its `tool`.
fn command_of(output: &ToolOutput) -> &str {
    let arg = |key: &str| output.args.as_ref()?.get(key)?.as_str();
    arg("command")
        .or_else(|| arg("cmd"))
        .unwrap_or(&output.tool)
}

#[cfg(test)]
mod tests;
