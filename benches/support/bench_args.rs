//! The bench's command line: which store, which workloads, at which sizes, and the flags
//! that make this binary one of its own child processes.

use std::path::PathBuf;

/// What the command line asks for.
pub struct Args {
    /// `--quick`: smaller sizes.
    pub quick: bool,
    /// `--memory` (or `--store memory`): the in-memory store.
    pub memory: bool,
    /// `--store postgres`: the database URL.
    pub postgres: Option<String>,
    /// `--workers N` (PostgreSQL): (a) also with N worker processes on one database.
    pub workers: usize,
    /// Set in the extra worker processes of `--workers`: the schema they work on.
    pub pg_worker_child: Option<String>,
    /// `--cross-process`: (x) next to the workloads picked.
    pub cross_process: bool,
    /// Set in the child process of (x): the file it works on.
    pub cross_process_child: Option<PathBuf>,
    /// Set in the client process of (http): the server's URL.
    pub http_client: Option<String>,
    /// Set in the client process of (http) over HTTPS: the CA file it trusts.
    pub http_ca: Option<PathBuf>,
    /// `--tls`: (http) over HTTPS.
    pub tls: bool,
    /// Set in the reader process of (s): where it reads (a SQLite file, `postgres:SCHEMA`,
    /// or the server's URL), the workflow id, and how many entries of each kind it expects.
    pub stream_reader_child: Option<(String, String, usize)>,
    /// `--only a,b`: the workloads picked (all but `x` and `http` without it).
    pub only: Option<Vec<String>>,
    /// `--runs N`: how many waiting workflows (f) starts (default 100,000; 10,000 with --quick).
    pub runs: Option<usize>,
}

/// The command line's arguments, or a message (the usage, or what is wrong) to print.
pub fn parse_args() -> Result<Args, String> {
    let mut args = Args {
        quick: false,
        memory: false,
        postgres: None,
        workers: 1,
        pg_worker_child: None,
        cross_process: false,
        cross_process_child: None,
        http_client: None,
        http_ca: None,
        tls: false,
        stream_reader_child: None,
        only: None,
        runs: None,
    };
    let mut it = std::env::args().skip(1);
    let (mut postgres, mut url) = (false, None);
    while let Some(a) = it.next() {
        match a.as_str() {
            "--quick" => args.quick = true,
            "--memory" => args.memory = true,
            "--store" => match it.next().as_deref() {
                Some("sqlite") => {}
                Some("memory") => args.memory = true,
                Some("postgres") => postgres = true,
                other => {
                    return Err(format!(
                        "--store takes sqlite, memory or postgres, not {other:?}"
                    ))
                }
            },
            "--postgres-url" => url = Some(it.next().ok_or("--postgres-url needs a URL")?),
            "--workers" => {
                let n = it.next().ok_or("--workers needs a number")?;
                args.workers = match n.parse::<usize>() {
                    Ok(n) if n >= 1 => n,
                    _ => return Err(format!("--workers takes a number from 1, not {n:?}")),
                };
            }
            "--pg-worker-child" => {
                let schema = it.next().ok_or("--pg-worker-child needs a schema")?;
                args.pg_worker_child = Some(schema);
            }
            "--cross-process" => args.cross_process = true,
            // The HTTP workloads alone (with --only, next to those listed).
            "--http" => {
                args.only.get_or_insert_with(Vec::new).push("http".into());
            }
            "--http-client" => {
                let url = it.next().ok_or("--http-client needs the server's URL")?;
                args.http_client = Some(url);
            }
            "--http-ca" => {
                let ca = it.next().ok_or("--http-ca needs a CA file")?;
                args.http_ca = Some(ca.into());
            }
            "--tls" => args.tls = true,
            "--cross-process-child" => {
                let path = it.next().ok_or("--cross-process-child needs a file")?;
                args.cross_process_child = Some(path.into());
            }
            "--stream-reader-child" => {
                let mut next = || it.next().ok_or("--stream-reader-child needs PLACE ID N");
                let (place, id, n) = (next()?, next()?, next()?);
                let n = n
                    .parse()
                    .map_err(|_| format!("--stream-reader-child: N is a number, not {n:?}"))?;
                args.stream_reader_child = Some((place, id, n));
            }
            "--runs" => {
                let n = it
                    .next()
                    .ok_or("--runs needs a number, e.g. --runs 1000000")?;
                let n = n.replace(['_', ','], "");
                let n: usize = n
                    .parse()
                    .map_err(|_| format!("--runs takes a positive number, not {n:?}"))?;
                if n == 0 {
                    return Err("--runs takes a positive number, not 0".into());
                }
                args.runs = Some(n);
            }
            "--only" => {
                let list = it.next().ok_or("--only needs a list, e.g. --only a,b")?;
                let only = args.only.get_or_insert_with(Vec::new);
                only.extend(list.split(',').map(|s| s.trim().to_string()));
            }
            "--help" | "-h" => {
                return Err(
                    "usage: bench [--quick] [--store sqlite|memory|postgres] [--postgres-url URL] \
                     [--workers N] [--memory] [--cross-process] [--http [--tls]] \
                     [--only a,b,c,d,e,f,g,q,s,x,http] [--runs N (waiting workflows in (f))]"
                        .into(),
                );
            }
            other => return Err(format!("unknown argument {other:?}; try --help")),
        }
    }
    if postgres {
        args.postgres = Some(super::pg::url(url)?);
    } else if args.workers > 1 {
        return Err(
            "--workers needs --store postgres (worker processes share one database)".into(),
        );
    }
    Ok(args)
}
