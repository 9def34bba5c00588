//! Network-stack baseline for `ardacat bench --scenario ping`: a minimal tokio echo server and a
//! pinger that measures it the way the load generator measures the catalogue (N persistent
//! connections, one task each, one 4-byte request in flight per connection, nearest-rank
//! percentiles). The gap between its ops/s and `ping`'s is what the catalogue's own work costs.
//!
//!   echo_baseline server PORT            (0 picks a free port; prints `echo_baseline listening PORT`)
//!   echo_baseline ping --port P [--host H] --connections N --duration S [--json]
//!
//! The server uses tokio's multi-threaded runtime like ardacat-server; the pinger a
//! current-thread runtime like the `ardacat` client. Nothing here touches the catalogue.

use std::process::ExitCode;
use std::time::{Duration, Instant};

use ardacat_client::bench::percentile;
use clap::{Parser, Subcommand};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

/// The request and its echo: as many bytes as the `pwd` command line.
const MESSAGE: &[u8] = b"pwd\n";

#[derive(Parser, Debug)]
#[command(name = "echo_baseline", about = "tokio echo server and pinger: the network-stack limit for `bench ping`")]
struct Cli {
    #[command(subcommand)]
    cmd: Cmd,
}

#[derive(Subcommand, Debug)]
enum Cmd {
    /// Echo every byte back until the peer closes; runs until killed.
    Server {
        /// Port on 127.0.0.1 (0 picks a free one).
        port: u16,
    },
    /// N connections send a 4-byte message and wait for its echo, for a fixed time.
    Ping {
        #[arg(long, default_value = "127.0.0.1")]
        host: String,
        #[arg(long)]
        port: u16,
        #[arg(long, default_value_t = 1)]
        connections: usize,
        /// Seconds to run.
        #[arg(long, default_value_t = 10.0)]
        duration: f64,
        /// Print one JSON object (the keys of `ardacat bench --json`).
        #[arg(long)]
        json: bool,
    },
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match cli.cmd {
        Cmd::Server { port } => tokio::runtime::Builder::new_multi_thread()
            .enable_all()
            .build()
            .map_err(|e| e.to_string())
            .and_then(|rt| rt.block_on(server(port))),
        Cmd::Ping { host, port, connections, duration, json } => tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map_err(|e| e.to_string())
            .and_then(|rt| {
                rt.block_on(ping(&host, port, connections.max(1), Duration::from_secs_f64(duration.max(0.0))))
            })
            .map(|report| {
                if json {
                    println!("{}", report.to_json());
                } else {
                    println!("{report}");
                }
            }),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("echo_baseline: {e}");
            ExitCode::FAILURE
        }
    }
}

async fn server(port: u16) -> Result<(), String> {
    let listener = TcpListener::bind(("127.0.0.1", port)).await.map_err(|e| format!("bind: {e}"))?;
    let port = listener.local_addr().map_err(|e| e.to_string())?.port();
    println!("echo_baseline listening {port}");
    loop {
        let Ok((mut stream, _)) = listener.accept().await else { continue };
        tokio::spawn(async move {
            let _ = stream.set_nodelay(true);
            let mut buf = vec![0u8; 4096];
            loop {
                match stream.read(&mut buf).await {
                    Ok(0) | Err(_) => break,
                    Ok(n) => {
                        if stream.write_all(&buf[..n]).await.is_err() {
                            break;
                        }
                    }
                }
            }
        });
    }
}

struct Report {
    connections: usize,
    elapsed: Duration,
    ops: u64,
    errors: u64,
    latencies: Vec<u32>,
    first_error: Option<String>,
}

impl Report {
    fn ops_per_sec(&self) -> f64 {
        self.ops as f64 / self.elapsed.as_secs_f64()
    }

    fn to_json(&self) -> serde_json::Value {
        let round3 = |x: f64| (x * 1000.0).round() / 1000.0;
        let mut v = serde_json::json!({
            "scenario": "echo",
            "protocol": "tcp",
            "connections": self.connections,
            "duration_s": round3(self.elapsed.as_secs_f64()),
            "ops": self.ops,
            "errors": self.errors,
            "ops_per_sec": round3(self.ops_per_sec()),
            "p50_us": percentile(&self.latencies, 0.50),
            "p90_us": percentile(&self.latencies, 0.90),
            "p99_us": percentile(&self.latencies, 0.99),
            "max_us": self.latencies.last().copied().map_or(0, u64::from),
        });
        if let (Some(map), Some(e)) = (v.as_object_mut(), &self.first_error) {
            map.insert("first_error".into(), serde_json::json!(e));
        }
        v
    }
}

impl std::fmt::Display for Report {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "echo, {} connection(s), {:.1} s: {} ops ({} errors), {:.1} ops/s, p50 {} µs, p99 {} µs",
            self.connections,
            self.elapsed.as_secs_f64(),
            self.ops,
            self.errors,
            self.ops_per_sec(),
            percentile(&self.latencies, 0.50),
            percentile(&self.latencies, 0.99)
        )
    }
}

#[derive(Default)]
struct TaskResult {
    latencies: Vec<u32>,
    ops: u64,
    errors: u64,
    first_error: Option<String>,
}

async fn ping(host: &str, port: u16, connections: usize, duration: Duration) -> Result<Report, String> {
    let mut streams = Vec::with_capacity(connections);
    for _ in 0..connections {
        let s = TcpStream::connect((host, port)).await.map_err(|e| format!("connect {host}:{port}: {e}"))?;
        s.set_nodelay(true).map_err(|e| e.to_string())?;
        streams.push(s);
    }
    let start = Instant::now() + Duration::from_millis(50);
    let deadline = start + duration;
    let handles: Vec<_> = streams
        .into_iter()
        .map(|mut s| {
            tokio::spawn(async move {
                let mut out = TaskResult { latencies: Vec::with_capacity(4096), ..TaskResult::default() };
                let mut buf = [0u8; MESSAGE.len()];
                tokio::time::sleep_until(start.into()).await;
                while Instant::now() < deadline {
                    let t0 = Instant::now();
                    let r = async {
                        s.write_all(MESSAGE).await?;
                        s.read_exact(&mut buf).await?;
                        Ok::<_, std::io::Error>(())
                    }
                    .await;
                    match r {
                        Ok(()) if buf == MESSAGE => {
                            out.latencies.push(u32::try_from(t0.elapsed().as_micros()).unwrap_or(u32::MAX));
                            out.ops += 1;
                        }
                        Ok(()) => {
                            out.errors += 1;
                            out.first_error.get_or_insert_with(|| "echo differs from the request".into());
                        }
                        Err(e) => {
                            out.errors += 1;
                            out.first_error.get_or_insert_with(|| e.to_string());
                            break;
                        }
                    }
                }
                out
            })
        })
        .collect();
    let mut all = TaskResult::default();
    for h in handles {
        let r = h.await.map_err(|e| format!("ping task failed: {e}"))?;
        all.latencies.extend(r.latencies);
        all.ops += r.ops;
        all.errors += r.errors;
        if all.first_error.is_none() {
            all.first_error = r.first_error;
        }
    }
    let elapsed = start.elapsed().max(Duration::from_millis(1));
    all.latencies.sort_unstable();
    if all.ops == 0 {
        return Err(all.first_error.unwrap_or_else(|| "no operation completed".into()));
    }
    Ok(Report {
        connections,
        elapsed,
        ops: all.ops,
        errors: all.errors,
        latencies: all.latencies,
        first_error: all.first_error,
    })
}
