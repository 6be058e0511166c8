//! `ctxopt hook claude-code|gemini-cli`: the command a client runs as a hook. It reads the
//! hook payload on stdin and prints the client's JSON with a budgeted context, or nothing;
//! it always exits 0 and writes what happened (or why nothing) to its own log.

use std::io::Read;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Instant;

use ctxopt::clients::catalog::HookClient;
use ctxopt::hooks::{self, HookConfig, ToolServer, DEFAULT_HOOK_BUDGET, DEFAULT_RESTORE_BUDGET};
use ctxopt::tokenizer::memo::{self, CountMemo};

/// The file in the state directory that remembers token counts from one run to the next.
const TOKEN_COUNTS: &str = "token-counts";

/// The longest payload read (a payload is a few kilobytes; anything longer is refused).
const MAX_PAYLOAD: u64 = 4 * 1024 * 1024;

/// Arguments of `ctxopt hook`.
#[derive(Debug, clap::Args)]
pub(crate) struct Args {
    /// The client that runs the hook.
    #[arg(value_enum)]
    pub client: HookClient,
    /// Token budget of a prompt-time context [env: CTXOPT_HOOK_BUDGET; default 1500].
    #[arg(long)]
    pub budget: Option<usize>,
    /// Token budget of a restore, `SessionStart` after a compaction or on a resumed session
    /// [env: CTXOPT_RESTORE_BUDGET; default 2500]; the answer stays within 10,000
    /// characters all the same.
    #[arg(long)]
    pub restore_budget: Option<usize>,
    /// The store (a path or `:memory:`) [env: CTXOPT_STORE; default the state directory's
    /// store.sqlite3].
    #[arg(long)]
    pub store: Option<String>,
    /// Where the hook keeps its state and its log, hook.log [env: CTXOPT_STATE_DIR; default
    /// $XDG_STATE_HOME/ctxopt].
    #[arg(long)]
    pub state_dir: Option<PathBuf>,
    /// On Claude Code's `PreCompact`, print instructions that Claude Code gives its
    /// summarizer: keep the session's files in play, plan and open problems in the summary
    /// [env: CTXOPT_SUMMARY_INSTRUCTIONS=1; default off: on the benchmark's recorded
    /// compactions they name no file edited next that the summary lacks].
    #[arg(long)]
    pub summary_instructions: bool,
}

/// Turns transparent huge pages off for this process. A hook run is short and touches little
/// of the allocator's reserved arena, but with huge pages every first touch of a 2 MiB region
/// makes the kernel zero all of it: half the CPU time of a run went to that, and its peak
/// memory doubled (`docs/benchmarks.md`, "Hook speed"). Where the call is refused, nothing
/// changes.
fn no_huge_pages() {
    #[cfg(target_os = "linux")]
    // SAFETY: `prctl(PR_SET_THP_DISABLE, 1, 0, 0, 0)` takes integer arguments only and reads
    // or writes no memory of this process; it only sets a flag of the process.
    unsafe {
        libc::prctl(libc::PR_SET_THP_DISABLE, 1, 0, 0, 0);
    }
}

/// Calls [`no_huge_pages`] before `main` when the command is `ctxopt hook`: the Rust runtime
/// and the argument parser allocate before `main` runs the hook, and the allocator's first
/// pages were zeroed 2 MiB at a time (3–4 ms of a run's CPU, `docs/benchmarks.md`). glibc runs
/// the functions of `.init_array` before any other code of the program, with `main`'s `argc`
/// and `argv`.
#[cfg(all(target_os = "linux", target_env = "gnu"))]
#[used]
#[link_section = ".init_array"]
static NO_HUGE_PAGES_FOR_A_HOOK: extern "C" fn(
    libc::c_int,
    *const *const libc::c_char,
    *const *const libc::c_char,
) = no_huge_pages_for_a_hook;

/// The `.init_array` function of [`NO_HUGE_PAGES_FOR_A_HOOK`].
#[cfg(all(target_os = "linux", target_env = "gnu"))]
extern "C" fn no_huge_pages_for_a_hook(
    argc: libc::c_int,
    argv: *const *const libc::c_char,
    _envp: *const *const libc::c_char,
) {
    if argc < 2 || argv.is_null() {
        return;
    }
    // SAFETY: glibc passes `main`'s arguments: `argv` holds `argc` pointers to NUL-terminated
    // strings, and `argc >= 2` makes `argv[1]` one of them (checked for null all the same).
    let command = unsafe {
        let first = *argv.add(1);
        if first.is_null() {
            return;
        }
        std::ffi::CStr::from_ptr(first)
    };
    if command.to_bytes() == b"hook" {
        no_huge_pages();
    }
}

/// Runs the hook: prints the answer when there is one; exit code 0 whatever happens.
pub(crate) fn run(args: Args) -> anyhow::Result<ExitCode> {
    // A panic must not print on stderr (the client may show it) nor change the exit code.
    std::panic::set_hook(Box::new(|_| {}));
    let started = Instant::now();
    // Done before `main` already where glibc runs `NO_HUGE_PAGES_FOR_A_HOOK`.
    no_huge_pages();
    let env = |k: &str| std::env::var(k).ok().filter(|v| !v.is_empty());
    let state_dir = state_dir(args.state_dir);
    let budget = args
        .budget
        .or_else(|| env("CTXOPT_HOOK_BUDGET").and_then(|b| b.parse().ok()))
        .filter(|b| *b > 0)
        .unwrap_or(DEFAULT_HOOK_BUDGET);
    let restore_budget = args
        .restore_budget
        .or_else(|| env("CTXOPT_RESTORE_BUDGET").and_then(|b| b.parse().ok()))
        .filter(|b| *b > 0)
        .unwrap_or(DEFAULT_RESTORE_BUDGET);
    let config = HookConfig {
        budget,
        restore_budget,
        tool_server: ToolServer::Detect,
        store: args.store.or_else(|| env("CTXOPT_STORE")),
        state_dir,
        summary_instructions: args.summary_instructions
            || env("CTXOPT_SUMMARY_INSTRUCTIONS").as_deref() == Some("1"),
    };
    let client = args.client;
    let mut input = Vec::new();
    let read = std::io::stdin()
        .take(MAX_PAYLOAD + 1)
        .read_to_end(&mut input);
    let outcome = match read {
        Err(e) => Err(format!("reading stdin: {e}")),
        Ok(_) if input.len() as u64 > MAX_PAYLOAD => {
            Err(format!("payload over {MAX_PAYLOAD} bytes"))
        }
        Ok(_) => std::panic::catch_unwind(|| run_remembering_counts(client, &input, &config))
            .map_err(|_| "internal error (panic)".to_string())
            .and_then(|r| r.map_err(|e| e.to_string())),
    };
    let ms = started.elapsed().as_millis();
    match outcome {
        Ok(run) => {
            if let Some(out) = &run.stdout {
                use std::io::Write;
                let mut stdout = std::io::stdout().lock();
                let _ = writeln!(stdout, "{out}").and_then(|()| stdout.flush());
            }
            hooks::log::append(
                &config.state_dir,
                &format!("{} ok {ms}ms {}", now(), run.note),
            );
        }
        Err(reason) => log_no_output(&config.state_dir, ms, client.name(), &reason),
    }
    exit_now()
}

/// The hook's state directory: `explicit` (`--state-dir`), else `CTXOPT_STATE_DIR`, else
/// `$XDG_STATE_HOME/ctxopt`, else `~/.local/state/ctxopt`, else one in the temporary folder.
fn state_dir(explicit: Option<PathBuf>) -> PathBuf {
    explicit
        .or_else(|| {
            std::env::var_os("CTXOPT_STATE_DIR")
                .filter(|v| !v.is_empty())
                .map(PathBuf::from)
        })
        .or_else(|| dirs::state_dir().map(|d| d.join("ctxopt")))
        .or_else(|| dirs::home_dir().map(|h| h.join(".local/state/ctxopt")))
        .unwrap_or_else(|| std::env::temp_dir().join("ctxopt"))
}

/// Whether this process is `ctxopt hook …` run by a client: the command is `hook` and its
/// standard input is not a terminal (a client pipes the payload; a person at a terminal gets
/// the argument parser's usual message and exit code).
pub(crate) fn run_by_a_client(args: &[std::ffi::OsString]) -> bool {
    use std::io::IsTerminal;
    args.get(1).is_some_and(|a| a == "hook") && !std::io::stdin().is_terminal()
}

/// Ends a hook run whose command line cannot be read — an option of a newer ctxopt, a client
/// it does not know, a typo in the settings. A client takes a hook's exit code 2 (the
/// argument parser's) as a decision: Claude Code blocks the prompt, the compaction or the
/// tool call, and a `Stop` hook's 2 keeps the agent going. So the hook does what it does on
/// every other failure: it prints nothing, writes why in its log (the `--state-dir` the
/// command line names, when it names one) and exits 0.
pub(crate) fn refuse_command_line(args: &[std::ffi::OsString], error: &clap::Error) -> ExitCode {
    let named = args
        .iter()
        .position(|a| a == "--state-dir")
        .and_then(|i| args.get(i + 1))
        .map(PathBuf::from)
        .or_else(|| {
            args.iter()
                .find_map(|a| a.to_str()?.strip_prefix("--state-dir=").map(PathBuf::from))
        });
    let reason = error
        .to_string()
        .lines()
        .next()
        .unwrap_or_default()
        .trim_start_matches("error: ")
        .to_string();
    // The payload is read all the same: a client writing it must not meet a closed pipe.
    let _ = std::io::copy(
        &mut std::io::stdin().take(MAX_PAYLOAD),
        &mut std::io::sink(),
    );
    log_no_output(
        &state_dir(named),
        0,
        "hook",
        &format!("the command line: {reason}"),
    );
    ExitCode::SUCCESS
}

/// The log line of a run that printed nothing: `<time> no-output <ms>ms <who>: <reason>`.
fn log_no_output(state_dir: &std::path::Path, ms: u128, who: &str, reason: &str) {
    hooks::log::append(
        state_dir,
        &format!("{} no-output {ms}ms {who}: {reason}", now()),
    );
}

/// The time of a log line (UTC, milliseconds).
fn now() -> String {
    chrono::Utc::now()
        .format("%Y-%m-%dT%H:%M:%S%.3fZ")
        .to_string()
}

/// Runs the hook with the token counts of earlier runs remembered ([`memo`]), and saves
/// them when the run counted something new; the log line says how many were known.
fn run_remembering_counts(
    client: HookClient,
    input: &[u8],
    config: &HookConfig,
) -> Result<hooks::HookRun, hooks::HookError> {
    let path = config.state_dir.join(TOKEN_COUNTS);
    let memo = memo::remember(CountMemo::load(&path));
    let mut run = hooks::run(client, input, config)?;
    run.note
        .push_str(&format!("; token counts known {}", memo.len()));
    match memo.save_if_added(&path) {
        Ok(true) => run.note.push_str(", saved"),
        Ok(false) => {}
        Err(e) => run.note.push_str(&format!(", not saved: {e}")),
    }
    Ok(run)
}

/// Ends the process with exit code 0, now: the answer and the log line are written (stdout
/// flushed, the log file closed, the store closed by `hooks::run`), and the clean-up of a
/// normal exit (the allocator returning every page to the system, freeing what the run
/// built) was about 2 % of a run's CPU for nothing.
fn exit_now() -> anyhow::Result<ExitCode> {
    #[cfg(unix)]
    // SAFETY: `_exit` takes an integer and does not return; no Rust code runs after it, so no
    // invariant of this process can be broken, and nothing buffered is left to write.
    unsafe {
        libc::_exit(0)
    }
    #[cfg(not(unix))]
    Ok(ExitCode::SUCCESS)
}
