//! The `ardacat` command-line client: argument parsing, connection settings (mdclient.config plus
//! flags), and dispatch to one-shot, line-input, interactive, import/export, dump/restore and
//! bench modes. The protocol lives in the library; this file must not speak wire bytes itself.

// The load generator shares the machine with the server it measures: allocation cost spent
// here is CPU the server does not get.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

mod cli;

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use ardacat_client::bench::{self, BenchOptions, Protocol, Scenario};
use ardacat_client::{Client, ClientConfig, DEFAULT_PORT, Format, MdConfig, TlsClientConfig, UseSsl};
use clap::{Args, Parser, Subcommand};

/// Default HTTP port of the SOAP endpoint (for `bench --protocol soap`).
const DEFAULT_SOAP_PORT: u16 = 8823;

#[derive(Parser, Debug)]
#[command(
    name = "ardacat",
    version,
    about = "Client for the ardacat / AMGA metadata catalogue (TCP streaming protocol)",
    after_help = "Without -c, -f or a subcommand, commands are read from standard input when it is not a \
                  terminal, otherwise an interactive shell starts (prompt `Query>`).\n\
                  Settings are read from ~/.mdclient.config, then ./mdclient.config (Host, Port, Login, \
                  Password, UseSSL, TrustedCertDir, CAFile, CertFile, KeyFile, AuthenticateWithCertificate); \
                  flags override them."
)]
struct Cli {
    #[command(flatten)]
    conn: ConnArgs,
    /// Run this command and exit; may be repeated (stops at the first error).
    #[arg(short = 'c', long = "command", value_name = "COMMAND")]
    commands: Vec<String>,
    /// Read commands from this file, one per line (`-` for standard input).
    #[arg(short = 'f', long = "file", value_name = "FILE", conflicts_with = "commands")]
    file: Option<PathBuf>,
    /// Output format: amga (raw lines), table, csv or json (one array per row).
    #[arg(long, global = true, default_value = "amga", value_name = "FORMAT", help_heading = "Output")]
    format: Format,
    #[command(subcommand)]
    sub: Option<Sub>,
}

#[derive(Args, Debug, Clone)]
#[command(next_help_heading = "Connection (override mdclient.config)")]
struct ConnArgs {
    /// Server host [config: Host; default localhost].
    #[arg(long, global = true)]
    host: Option<String>,
    /// Server port [config: Port; default 8822].
    #[arg(long, global = true)]
    port: Option<u16>,
    /// Login name [config: Login; default anonymous, or empty (login by certificate) with a client
    /// certificate].
    #[arg(long, global = true)]
    login: Option<String>,
    /// Password [config: Password].
    #[arg(long, global = true, env = "ARDACAT_PASSWORD", hide_env_values = true)]
    password: Option<String>,
    /// Ask for the escape extension (values with newlines; NULL shown as \N in amga format).
    #[arg(long, global = true)]
    escape: bool,
    /// Ask the server for a session id, so a lost connection can be resumed.
    #[arg(long, global = true)]
    session: bool,
    /// Read only this configuration file instead of ~/.mdclient.config and ./mdclient.config.
    #[arg(long, global = true, value_name = "FILE")]
    config: Option<PathBuf>,
    /// Use TLS: send the `ssl` option, then log in inside TLS [config: UseSSL = require].
    #[arg(long, visible_alias = "tls", global = true, help_heading = "TLS")]
    ssl: bool,
    /// Connect without TLS whatever the configuration says.
    #[arg(long, global = true, conflicts_with_all = ["ssl", "tls_ca", "tls_cert", "tls_key"], help_heading = "TLS")]
    no_ssl: bool,
    /// CA certificates the server's certificate must chain to: a PEM file, or a directory of them
    /// [config: CAFile or TrustedCertDir; default /etc/grid-security/certificates if it exists].
    /// Implies --ssl.
    #[arg(long, global = true, value_name = "FILE|DIR", help_heading = "TLS")]
    tls_ca: Option<PathBuf>,
    /// Client certificate (PEM) [config: CertFile]; without a login, log in as the user it maps
    /// to on the server. Implies --ssl.
    #[arg(long, global = true, value_name = "FILE", requires = "tls_key", help_heading = "TLS")]
    tls_cert: Option<PathBuf>,
    /// Key of the client certificate (PEM) [config: KeyFile]. Implies --ssl.
    #[arg(long, global = true, value_name = "FILE", requires = "tls_cert", help_heading = "TLS")]
    tls_key: Option<PathBuf>,
}

/// mdclient's default place for trusted CA certificates.
const GRID_CERT_DIR: &str = "/etc/grid-security/certificates";

#[derive(Subcommand, Debug)]
enum Sub {
    /// Bulk-load a CSV file (header `FILE,attr1,attr2,…`) into a collection with upload/put/commit.
    Import {
        /// Target collection.
        #[arg(long)]
        dir: String,
        /// CSV file (`-` for standard input).
        #[arg(long)]
        file: PathBuf,
        /// Entries per upload (one transaction each).
        #[arg(long, default_value_t = 1000)]
        batch: usize,
    },
    /// Stream a selectattr query into a CSV file.
    Export {
        /// A selected expression such as `/coll:FILE` or `/coll:attr`; repeat for more columns.
        #[arg(long = "select", required = true, value_name = "EXPR")]
        selects: Vec<String>,
        /// Query condition (empty: all entries).
        #[arg(long, default_value = "")]
        condition: String,
        /// Output file (default standard output).
        #[arg(long)]
        out: Option<PathBuf>,
    },
    /// Dump a subtree (default /) in the versioned dump format (docs/dump-format.md).
    Dump {
        /// The collection to dump.
        #[arg(default_value = "/")]
        path: String,
        /// Output file (default standard output); compressed when it ends in .gz or .zst.
        #[arg(short = 'o', long = "out", value_name = "FILE")]
        out: Option<PathBuf>,
    },
    /// Restore a dump, all or nothing (one server transaction; root only).
    Restore {
        /// Input file (default standard input); gzip and zstd are recognised.
        #[arg(short = 'i', long = "in", value_name = "FILE")]
        input: Option<PathBuf>,
        /// Restore the dumped subtree here instead of where it came from.
        #[arg(long, value_name = "PATH")]
        into: Option<String>,
    },
    /// Load generator: N persistent connections for a fixed time; reports ops/s and latency.
    Bench {
        /// ping | get | add | bulkget | query | setattr | addbulk | update
        #[arg(long, default_value = "ping")]
        scenario: Scenario,
        /// Concurrent connections, one task each.
        #[arg(long, default_value_t = 1)]
        connections: usize,
        /// Seconds to run.
        #[arg(long, default_value_t = 10.0)]
        duration: f64,
        /// tcp | soap (SOAP supports all but query; --port is then the HTTP port, default 8823).
        #[arg(long, default_value = "tcp")]
        protocol: Protocol,
        /// Print one JSON object instead of text.
        #[arg(long)]
        json: bool,
        /// First (re)create /bench, /bench1k and /bench_add with 60 attributes and random entries.
        #[arg(long)]
        setup: bool,
        /// Entries in /bench (created by --setup, drawn from by get).
        #[arg(long, default_value_t = 10000)]
        entries: usize,
        /// HTTP path of the SOAP endpoint.
        #[arg(long, default_value = "/soap")]
        soap_path: String,
        /// TCP port used by --setup when --protocol soap [default: config Port or 8822].
        #[arg(long)]
        tcp_port: Option<u16>,
        /// SOAP: on = persistent connections; off = a new HTTP connection per request.
        #[arg(long, default_value = "on", value_parser = ["on", "off"])]
        keep_alive: String,
        /// addbulk: entries per operation (one upload, or one createEntry).
        #[arg(long, default_value_t = 100)]
        batch: usize,
    },
}

/// Exit status for usage, configuration and connection failures.
const EXIT_SETUP: u8 = 2;

fn main() -> ExitCode {
    let cli = Cli::parse();
    let (config, file_port) = match resolve_config(&cli.conn) {
        Ok(c) => c,
        Err(msg) => {
            eprintln!("ardacat: {msg}");
            return ExitCode::from(EXIT_SETUP);
        }
    };
    let runtime = match tokio::runtime::Builder::new_current_thread().enable_all().build() {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("ardacat: cannot start the runtime: {e}");
            return ExitCode::from(EXIT_SETUP);
        }
    };
    match cli.sub {
        Some(Sub::Bench {
            scenario,
            connections,
            duration,
            protocol,
            json,
            setup,
            entries,
            soap_path,
            tcp_port,
            keep_alive,
            batch,
        }) => {
            let mut run_config = config.clone();
            if protocol == Protocol::Soap {
                run_config.port = cli.conn.port.unwrap_or(DEFAULT_SOAP_PORT);
            }
            let opts = BenchOptions {
                client: run_config,
                scenario,
                protocol,
                connections,
                duration: Duration::from_secs_f64(duration.max(0.0)),
                entries,
                soap_path,
                keep_alive: keep_alive == "on",
                batch,
            };
            let mut setup_config = config;
            if protocol == Protocol::Soap {
                setup_config.port = tcp_port.or(file_port).unwrap_or(DEFAULT_PORT);
            }
            runtime.block_on(run_bench(opts, setup.then_some(setup_config), json))
        }
        Some(Sub::Import { dir, file, batch }) => runtime.block_on(async {
            let mut client = connect_or_report(config).await?;
            report(cli::transfer::import(&mut client, &dir, &file, batch).await)
        }),
        Some(Sub::Export { selects, condition, out }) => runtime.block_on(async {
            let mut client = connect_or_report(config).await?;
            report(cli::transfer::export(&mut client, &selects, &condition, out.as_deref()).await)
        }),
        Some(Sub::Dump { path, out }) => runtime.block_on(async {
            let mut client = connect_or_report(config).await?;
            report(cli::dump::dump(&mut client, &path, out.as_deref()).await)
        }),
        Some(Sub::Restore { input, into }) => runtime.block_on(async {
            let mut client = connect_or_report(config).await?;
            report(cli::dump::restore(&mut client, input.as_deref(), into.as_deref()).await)
        }),
        None => {
            let format = cli.format;
            if !cli.commands.is_empty() {
                runtime.block_on(async {
                    let mut client = connect_or_report(config).await?;
                    cli::shell::one_shot(&mut client, &cli.commands, format).await
                })
            } else if let Some(path) = cli.file {
                runtime.block_on(async {
                    let mut client = connect_or_report(config).await?;
                    cli::shell::from_file(&mut client, &path, format).await
                })
            } else if std::io::IsTerminal::is_terminal(&std::io::stdin()) {
                let client = match runtime.block_on(connect_or_report(config)) {
                    Ok(c) => c,
                    Err(code) => return code,
                };
                cli::shell::interactive(&runtime, client, format)
            } else {
                runtime.block_on(async {
                    let mut client = connect_or_report(config).await?;
                    cli::shell::from_reader(&mut client, tokio::io::BufReader::new(tokio::io::stdin()), format).await
                })
            }
        }
    }
    .unwrap_or_else(|code| code)
}

/// Turns an error of a whole operation into `Error <code>: <message>` and exit status 1.
fn report(result: anyhow::Result<()>) -> Result<ExitCode, ExitCode> {
    match result {
        Ok(()) => Ok(ExitCode::SUCCESS),
        Err(e) => {
            match e.downcast_ref::<ardacat_client::ClientError>() {
                Some(ce) => eprintln!("Error {}: {}", ce.code(), ce.message()),
                None => eprintln!("ardacat: {e:#}"),
            }
            Err(ExitCode::FAILURE)
        }
    }
}

async fn connect_or_report(config: ClientConfig) -> Result<Client, ExitCode> {
    let client = Client::connect(config).await.map_err(|e| {
        eprintln!("Error {}: {}", e.code(), e.message());
        ExitCode::from(EXIT_SETUP)
    })?;
    if client.config().tls.is_some() && !client.is_tls() {
        eprintln!("ardacat: warning: the server does not offer TLS; connected without encryption (UseSSL = try)");
    }
    Ok(client)
}

/// Settings from the config files, overridden by flags. Also returns the file's port, which
/// `bench --protocol soap --setup` needs for its TCP connection.
fn resolve_config(args: &ConnArgs) -> Result<(ClientConfig, Option<u16>), String> {
    let paths = match &args.config {
        Some(path) => {
            if !path.exists() {
                return Err(format!("configuration file {} does not exist", path.display()));
            }
            vec![path.clone()]
        }
        None => MdConfig::default_paths(),
    };
    let (file, _found) = MdConfig::load_all(&paths).map_err(|e| format!("reading the configuration: {e}"))?;
    for warning in &file.warnings {
        eprintln!("ardacat: warning: {warning}");
    }
    let (tls, tls_optional) = resolve_tls(args, &file)?;
    // Certificate login: an empty login line, unless a login is given (then the certificate
    // must map to it); AuthenticateWithCertificate = 1 also keeps the file's password unsent.
    let cert_login = tls.as_ref().is_some_and(|t| t.cert.is_some());
    let by_cert = cert_login && file.auth_with_cert == Some(true);
    let defaults = ClientConfig::default();
    let default_login = if cert_login { String::new() } else { defaults.login.clone() };
    let config = ClientConfig {
        host: args.host.clone().or(file.host).unwrap_or(defaults.host),
        port: args.port.or(file.port).unwrap_or(defaults.port),
        login: args.login.clone().or(file.login).unwrap_or(default_login),
        password: args.password.clone().or(if by_cert { None } else { file.password }),
        escape: args.escape,
        session: args.session,
        tls,
        tls_optional,
        ..defaults
    };
    Ok((config, file.port))
}

/// TLS from flags and config: `--ssl` or any `--tls-*` flag (or `UseSSL = require`) requires
/// it, `UseSSL = try` uses it when the server offers it, `--no-ssl` or `UseSSL = no` never.
/// Returns the settings and whether a plain connection is acceptable.
fn resolve_tls(args: &ConnArgs, file: &MdConfig) -> Result<(Option<TlsClientConfig>, bool), String> {
    let flags = args.ssl || args.tls_ca.is_some() || args.tls_cert.is_some();
    let mode = match (args.no_ssl, flags) {
        (true, _) => UseSsl::No,
        (false, true) => UseSsl::Require,
        (false, false) => file.use_ssl.unwrap_or(UseSsl::No),
    };
    if mode == UseSsl::No {
        return Ok((None, false));
    }
    let grid = PathBuf::from(GRID_CERT_DIR);
    let ca = args
        .tls_ca
        .clone()
        .or_else(|| file.ca_file.clone())
        .or_else(|| file.trusted_cert_dir.clone())
        .or_else(|| grid.is_dir().then_some(grid));
    let (cert, key) = match (&args.tls_cert, &args.tls_key) {
        (Some(c), Some(k)) => (Some(c.clone()), Some(k.clone())),
        _ => (file.cert_file.clone(), file.key_file.clone()),
    };
    if cert.is_some() != key.is_some() {
        return Err(
            "a client certificate needs its key: give both CertFile and KeyFile (or --tls-cert and --tls-key)".into()
        );
    }
    if file.auth_with_cert == Some(true) && cert.is_none() {
        return Err("`AuthenticateWithCertificate = 1` needs CertFile and KeyFile (or --tls-cert and --tls-key)".into());
    }
    match (ca, mode) {
        (Some(ca), mode) => Ok((Some(TlsClientConfig { ca, cert, key }), mode == UseSsl::Try)),
        (None, UseSsl::Try) => {
            eprintln!(
                "ardacat: warning: `UseSSL = try` without CA certificates (--tls-ca, CAFile or TrustedCertDir): \
                 connecting without TLS"
            );
            Ok((None, false))
        }
        (None, _) => Err(format!(
            "TLS needs the CA certificates that signed the server's certificate: give --tls-ca <file or directory>, \
             or CAFile / TrustedCertDir in the configuration ({GRID_CERT_DIR} does not exist)"
        )),
    }
}

async fn run_bench(opts: BenchOptions, setup: Option<ClientConfig>, json: bool) -> Result<ExitCode, ExitCode> {
    if let Some(config) = setup {
        let mut client = connect_or_report(config).await?;
        let bar = indicatif::ProgressBar::new(opts.entries as u64 + bench::BENCH_1K_ENTRIES as u64);
        bar.set_style(
            indicatif::ProgressStyle::with_template("setup {bar:40} {pos}/{len} entries {msg} ({elapsed})")
                .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar()),
        );
        let base = opts.entries as u64;
        let mut progress = |dir: &str, n: u64| {
            bar.set_message(dir.to_owned());
            bar.set_position(if dir == bench::BENCH_DIR { n } else { base + n });
        };
        let result = bench::setup(&mut client, opts.entries, &mut progress).await;
        bar.finish_and_clear();
        if let Err(e) = result {
            eprintln!("Error {}: setup failed: {}", e.code(), e.message());
            return Err(ExitCode::FAILURE);
        }
        eprintln!(
            "setup: {} entries in {}, {} in {}",
            opts.entries,
            bench::BENCH_DIR,
            bench::BENCH_1K_ENTRIES,
            bench::BENCH_1K_DIR
        );
    }
    match bench::run(&opts).await {
        Ok(r) => {
            if json {
                println!("{}", r.to_json());
            } else {
                println!("{r}");
            }
            if r.ops == 0 { Err(ExitCode::FAILURE) } else { Ok(ExitCode::SUCCESS) }
        }
        Err(e) => {
            eprintln!("Error {}: {}", e.code(), e.message());
            Err(ExitCode::FAILURE)
        }
    }
}
