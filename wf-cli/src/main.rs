//! `wf`, the command line for operators of wf workflows: list, describe, follow and export
//! runs, send signals and updates, cancel and terminate, manage schedules, purge closed runs,
//! and check exported histories before a deploy. Against a SQLite file (`--db`), a PostgreSQL
//! database (`--postgres`, TLS as its URL says) or a wf-http server (`--url`).
//!
//! | module | what lives there |
//! |---|---|
//! | `args` | the command line's grammar |
//! | `exit` | exit codes and one-line errors |
//! | `render` | tables, times, colours, durations |
//! | `target` | opening `--db` or `--postgres`, or connecting to `--url` |
//! | `commands` | the commands, one file per family |

mod args;
mod commands;
mod exit;
mod render;
mod target;

use clap::Parser;
use std::process::ExitCode;

fn main() -> ExitCode {
    let cli = match args::Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) => {
            // --help and --version are not errors.
            let code = if e.use_stderr() {
                exit::USAGE
            } else {
                exit::OK
            };
            let _ = e.print();
            return ExitCode::from(code);
        }
    };
    let runtime = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("wf: error: cannot start the async runtime: {e}");
            return ExitCode::from(exit::ERROR);
        }
    };
    match runtime.block_on(commands::run(cli)) {
        Ok(()) => ExitCode::from(exit::OK),
        Err(failure) => {
            let style = render::Style::detect_stderr();
            eprintln!("wf: {} {failure}", style.error("error:"));
            ExitCode::from(failure.code)
        }
    }
}
