//! `ardacat dump [PATH] [-o FILE]` and `ardacat restore [-i FILE] [--into PATH]`: the dump's
//! lines between the server and a file or a pipe, gzip- or zstd-compressed by the file's name
//! (`.gz`, `.zst`) and recognised by their magic bytes on restore, with a progress display
//! (entries, entries/s, ETA) only when standard error is a terminal. The format and its checks
//! are the server's; this module must not interpret records beyond counting entries.

use std::fs::File;
use std::io::{self, BufRead, BufReader, BufWriter, IsTerminal, Read, Write};
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use ardacat_client::Client;

use super::transfer::Counting;
use indicatif::{ProgressBar, ProgressStyle};

const GZIP_MAGIC: [u8; 2] = [0x1f, 0x8b];
const ZSTD_MAGIC: [u8; 4] = [0x28, 0xb5, 0x2f, 0xfd];

fn style(template: &str) -> ProgressStyle {
    ProgressStyle::with_template(template).unwrap_or_else(|_| ProgressStyle::default_bar())
}

fn on_terminal() -> bool {
    io::stderr().is_terminal()
}

fn rate(n: u64, started: Instant) -> f64 {
    n as f64 / started.elapsed().as_secs_f64().max(1e-6)
}

/// The output for `-o FILE` (compressed by its extension) or standard output.
fn output(out: Option<&Path>) -> anyhow::Result<Box<dyn Write>> {
    let Some(path) = out else { return Ok(Box::new(BufWriter::new(io::stdout()))) };
    let file = BufWriter::new(File::create(path).with_context(|| format!("creating {}", path.display()))?);
    let name = path.to_string_lossy();
    Ok(if name.ends_with(".gz") {
        // No file name and mtime 0 in the gzip header: the same dump gives the same bytes.
        Box::new(flate2::GzBuilder::new().mtime(0).write(file, flate2::Compression::default()))
    } else if name.ends_with(".zst") {
        Box::new(zstd::Encoder::new(file, 3).context("starting zstd")?.auto_finish())
    } else {
        Box::new(file)
    })
}

/// Streams `dump <path>` into `out`. A dump that does not end in its trailer (the connection
/// broke) is an error, and a partial file is removed.
pub async fn dump(client: &mut Client, path: &str, out: Option<&Path>) -> anyhow::Result<()> {
    let result = write_dump(client, path, out).await;
    if result.is_err()
        && let Some(p) = out
    {
        let _ = std::fs::remove_file(p);
    }
    result
}

async fn write_dump(client: &mut Client, path: &str, out: Option<&Path>) -> anyhow::Result<()> {
    let mut sink = output(out)?;
    // The total for the ETA comes from the server's count of the same entries (a server
    // without `dump_count` gets a spinner instead; without a terminal there is no display).
    let total = if on_terminal() { client.dump_count(path).await.ok() } else { None };
    let bar = match (on_terminal(), total) {
        (false, _) => ProgressBar::hidden(),
        (true, Some(n)) if n > 0 => ProgressBar::new(n),
        (true, _) => ProgressBar::new_spinner(),
    };
    bar.set_style(if bar.length().is_some() {
        style("{bar:40} {msg} ({elapsed}, eta {eta})")
    } else {
        style("{spinner} {msg} ({elapsed})")
    });
    bar.enable_steady_tick(Duration::from_millis(200));
    let started = Instant::now();
    let (mut entries, mut last) = (0u64, String::new());
    let mut rows = client.dump(path).await?;
    while let Some(line) = rows.next_value().await? {
        let line = line.unwrap_or_default();
        if line.starts_with("E\t") {
            entries += 1;
            if entries.is_multiple_of(1000) {
                bar.set_position(entries);
                bar.set_message(format!("{entries} entries ({:.0} entries/s)", rate(entries, started)));
            }
        }
        sink.write_all(line.as_bytes())?;
        sink.write_all(b"\n")?;
        last = line;
    }
    if !last.starts_with("END\t") {
        bar.abandon();
        bail!("the dump ended without its trailer");
    }
    sink.flush()?;
    drop(sink);
    bar.finish_and_clear();
    if on_terminal() {
        eprintln!("dumped {entries} entries in {:.2} s", started.elapsed().as_secs_f64());
    }
    Ok(())
}

/// The dump's lines from `input` (or standard input), decompressed by their magic bytes.
fn input(input: Option<&Path>, count: Arc<AtomicU64>) -> anyhow::Result<(Box<dyn BufRead>, u64)> {
    let (raw, total): (Box<dyn Read>, u64) = match input {
        Some(p) if p != Path::new("-") => {
            let f = File::open(p).with_context(|| format!("opening {}", p.display()))?;
            let len = f.metadata().map(|m| m.len()).unwrap_or(0);
            (Box::new(f), len)
        }
        _ => (Box::new(io::stdin()), 0),
    };
    let mut buffered = BufReader::with_capacity(256 * 1024, Counting { inner: raw, count });
    let head = buffered.fill_buf()?.to_vec();
    let reader: Box<dyn BufRead> = if head.starts_with(&GZIP_MAGIC) {
        Box::new(BufReader::new(flate2::bufread::MultiGzDecoder::new(buffered)))
    } else if head.starts_with(&ZSTD_MAGIC) {
        Box::new(BufReader::new(zstd::Decoder::with_buffer(buffered).context("starting zstd")?))
    } else {
        Box::new(buffered)
    };
    Ok((reader, total))
}

/// Sends the dump in `file` (or standard input) to the server's `restore`.
pub async fn restore(client: &mut Client, file: Option<&Path>, into: Option<&str>) -> anyhow::Result<()> {
    let count = Arc::new(AtomicU64::new(0));
    let (reader, total) = input(file, count.clone())?;
    let bar = match (on_terminal(), total) {
        (false, _) => ProgressBar::hidden(),
        (true, 0) => ProgressBar::new_spinner(),
        (true, n) => ProgressBar::new(n),
    };
    bar.set_style(style("{bar:40} {msg} ({elapsed}, eta {eta})"));
    let started = Instant::now();
    let mut entries = 0u64;
    let lines = reader.lines();
    let result = client
        .restore(into, lines, |line| {
            if line.starts_with("E\t") {
                entries += 1;
                if entries.is_multiple_of(1000) {
                    bar.set_position(count.load(Ordering::Relaxed));
                    bar.set_message(format!("{entries} entries ({:.0} entries/s)", rate(entries, started)));
                }
            }
        })
        .await;
    match result {
        Ok(done) => {
            bar.finish_and_clear();
            if on_terminal() {
                eprintln!("restored {} entries in {:.2} s", done.entries, started.elapsed().as_secs_f64());
            }
            Ok(())
        }
        Err(e) => {
            bar.abandon();
            Err(anyhow::Error::new(e).context("nothing was restored"))
        }
    }
}
