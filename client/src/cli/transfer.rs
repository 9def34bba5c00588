//! `ardacat import` (CSV → upload/put/commit in batches) and `ardacat export` (streamed
//! selectattr → CSV), with an indicatif progress display and a final rate line on stderr.
//! Must not frame protocol bytes: uploads and queries go through the library `Client`.

use std::fs::File;
use std::io::{self, BufReader, BufWriter, Read, Write};
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use ardacat_client::Client;
use ardacat_client::csv::{CsvReader, write_record};
use ardacat_client::shape::column_name;
use indicatif::{ProgressBar, ProgressStyle};

/// Counts the bytes read through it, for a byte-based progress bar (import, restore).
pub(super) struct Counting<R> {
    pub(super) inner: R,
    pub(super) count: Arc<AtomicU64>,
}

impl<R: Read> Read for Counting<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = self.inner.read(buf)?;
        self.count.fetch_add(n as u64, Ordering::Relaxed);
        Ok(n)
    }
}

fn style(template: &str) -> ProgressStyle {
    ProgressStyle::with_template(template).unwrap_or_else(|_| ProgressStyle::default_bar())
}

fn summary(entries: u64, elapsed: Duration) -> String {
    let secs = elapsed.as_secs_f64().max(1e-6);
    format!("{entries} entries in {secs:.2} s ({:.0} entries/s)", entries as f64 / secs)
}

/// Imports `file` into `dir`. The header row is `FILE,attr1,…`; every row must have as many
/// fields. Each batch is one upload (one server transaction): on failure, earlier batches stay.
pub async fn import(client: &mut Client, dir: &str, file: &Path, batch: usize) -> anyhow::Result<()> {
    let batch = batch.max(1);
    let count = Arc::new(AtomicU64::new(0));
    let (source, total): (Box<dyn Read>, u64) = if file == Path::new("-") {
        (Box::new(io::stdin()), 0)
    } else {
        let f = File::open(file).with_context(|| format!("opening {}", file.display()))?;
        let len = f.metadata().map(|m| m.len()).unwrap_or(0);
        (Box::new(f), len)
    };
    let mut reader =
        CsvReader::new(BufReader::with_capacity(256 * 1024, Counting { inner: source, count: count.clone() }));
    let header = reader.read_record().context("reading the CSV header")?.context("the CSV file is empty")?;
    let Some((first, attrs)) = header.split_first() else { bail!("the CSV header is empty") };
    if !first.trim().eq_ignore_ascii_case("FILE") {
        bail!("the first CSV column must be FILE (the entry name), not {first:?}");
    }
    let attrs: Vec<String> = attrs.iter().map(|a| a.trim().to_owned()).collect();
    if let Some(bad) = attrs.iter().find(|a| a.is_empty()) {
        bail!("empty attribute name in the CSV header ({bad:?})");
    }

    let bar = if total > 0 {
        let bar = ProgressBar::new(total);
        bar.set_style(style("{bar:40} {bytes}/{total_bytes} {msg} ({elapsed}, eta {eta})"));
        bar
    } else {
        let bar = ProgressBar::new_spinner();
        bar.set_style(style("{spinner} {msg} ({elapsed})"));
        bar
    };
    let started = Instant::now();
    let mut imported = 0u64;
    loop {
        let mut rows = Vec::with_capacity(batch);
        while rows.len() < batch {
            let Some(record) = reader.read_record().with_context(|| format!("after {imported} imported entries"))?
            else {
                break;
            };
            if record.len() != header.len() {
                bar.abandon();
                bail!(
                    "line {}: {} fields where the header has {} ({imported} entries were imported before)",
                    reader.line(),
                    record.len(),
                    header.len()
                );
            }
            let mut fields = record.into_iter();
            let name = fields.next().unwrap_or_default();
            rows.push((name, fields.map(Some).collect::<Vec<_>>()));
        }
        if rows.is_empty() {
            break;
        }
        let n = rows.len();
        if let Err(e) = client.upload(dir, &attrs, rows).await {
            bar.abandon();
            return Err(anyhow::Error::new(e).context(format!("{imported} entries were imported before")));
        }
        imported += n as u64;
        bar.set_position(count.load(Ordering::Relaxed));
        bar.set_message(format!("{imported} entries"));
        if n < batch {
            break;
        }
    }
    bar.finish_and_clear();
    eprintln!("{}", summary(imported, started.elapsed()));
    Ok(())
}

/// Streams `selectattr <selects> <condition>` into CSV, header = the attribute names.
pub async fn export(
    client: &mut Client,
    selects: &[String],
    condition: &str,
    out: Option<&Path>,
) -> anyhow::Result<()> {
    let mut sink: Box<dyn Write> = match out {
        Some(path) => {
            Box::new(BufWriter::new(File::create(path).with_context(|| format!("creating {}", path.display()))?))
        }
        None => Box::new(BufWriter::new(io::stdout())),
    };
    let header: Vec<Option<&str>> = selects.iter().map(|s| Some(column_name(s))).collect();
    write_record(&mut sink, &header)?;
    let mut args: Vec<&str> = vec!["selectattr"];
    args.extend(selects.iter().map(String::as_str));
    args.push(condition);
    let line = client.command_line(&args)?;

    let bar = ProgressBar::new_spinner();
    bar.set_style(style("{spinner} {msg} ({elapsed})"));
    bar.enable_steady_tick(Duration::from_millis(200));
    let started = Instant::now();
    let mut rows = client.stream(&line).await?;
    let mut exported = 0u64;
    while let Some(row) = rows.next_row(selects.len()).await? {
        write_record(&mut sink, &row)?;
        exported += 1;
        if exported.is_multiple_of(1000) {
            let rate = exported as f64 / started.elapsed().as_secs_f64().max(1e-6);
            bar.set_message(format!("{exported} entries ({rate:.0}/s)"));
        }
    }
    sink.flush()?;
    bar.finish_and_clear();
    eprintln!("{}", summary(exported, started.elapsed()));
    Ok(())
}
