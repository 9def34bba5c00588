//! `ardacat-server`: parse flags, open the catalogue, serve until SIGINT/SIGTERM; SIGHUP
//! reloads certificates and the grid-mapfile (`ardacat_server::reload`). With
//! `--check-config FILE` it checks a config file and exits; `ardacat-server copy --from URL --to
//! URL` copies a catalogue into an empty database and exits (`ardacat_server::copy`).

use clap::Parser;
use tokio_util::sync::CancellationToken;

use ardacat_server::{Config, Listeners, RootPassword, bind, bind_metrics, config::Flags, open, serve_full, tls};

// glibc's malloc spent a third of the server's CPU on the get path (arena locks, consolidation of
// per-value strings freed on other threads); mimalloc's thread-local free lists do not
// (docs/benchmarks.md, "Allocator").
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    // SIGHUP means reload (`reload::on_sighup`), never terminate: take it over before anything
    // else, so one that arrives during start-up is ignored rather than fatal.
    let _hup = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::hangup())?;
    let args: Vec<String> = std::env::args().collect();
    if ardacat_server::copy::is_copy(&args) {
        let copy = ardacat_server::copy::CopyArgs::parse_from(&args[1..]);
        match ardacat_server::copy::run(&copy).await {
            Ok(done) => {
                println!("copied {} records ({} entries)", done.records, done.entries);
                return Ok(());
            }
            Err(e) => {
                eprintln!("ardacat-server copy: {e}; nothing was copied");
                std::process::exit(1);
            }
        }
    }
    let flags = Flags::parse();
    if let Some(path) = &flags.check_config {
        match ardacat_server::preflight::check_file(path) {
            Ok(_) => {
                println!("{}: OK", path.display());
                return Ok(());
            }
            Err(problems) => {
                for p in &problems {
                    eprintln!("{}: {p}", path.display());
                }
                std::process::exit(1);
            }
        }
    }
    let config = Config::load(flags)?;
    // Held to the end of `main`: dropping it writes out the lines still queued.
    let _log = ardacat_server::logging::init(config.log_format);
    // Unusable certificate settings stop the start before anything listens.
    let tls = tls::load(&config)?;
    let root_pw = std::env::var("ARDACAT_ROOT_PASSWORD").ok().filter(|p| !p.is_empty());
    let (cat, root) = open(&config, root_pw).await?;
    match root {
        RootPassword::Generated(pw) => {
            eprintln!("created user root with generated password: {pw}");
            eprintln!("(shown once; set ARDACAT_ROOT_PASSWORD on first start to choose it)");
        }
        RootPassword::FromEnv => tracing::info!("created user root from ARDACAT_ROOT_PASSWORD"),
        RootPassword::Existing => {}
    }
    let (tcp, http, bound) = bind(&config).await?;
    let metrics = bind_metrics(&config).await?;
    // Tests and scripts read this line to find ports chosen with 0.
    let tls_note = if tls.is_some() { " tls=on" } else { "" };
    let metrics_note = metrics.as_ref().map(|(_, a)| format!(" metrics={a}")).unwrap_or_default();
    println!(
        "ardacat-server listening tcp={} http={}{metrics_note} database={}{tls_note}",
        bound.tcp,
        bound.http,
        redact(&config.database)
    );
    let shutdown = CancellationToken::new();
    let signal = shutdown.clone();
    tokio::spawn(async move {
        let mut term = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()).ok();
        tokio::select! {
            _ = tokio::signal::ctrl_c() => {}
            _ = async { match term.as_mut() { Some(t) => { t.recv().await; } None => std::future::pending().await } } => {}
        }
        tracing::info!("shutting down");
        signal.cancel();
    });
    let listeners = Listeners { tcp, http, metrics: metrics.map(|(l, _)| l) };
    serve_full(cat, config, listeners, tls, shutdown).await;
    Ok(())
}

fn redact(url: &str) -> String {
    match (url.find("://"), url.rfind('@')) {
        (Some(s), Some(at)) if at > s => format!("{}://…@{}", &url[..s], &url[at + 1..]),
        _ => url.to_string(),
    }
}
