//! Differential deserialization vs the full parser (dds-soap.md §2.3, §5.3): message families
//! in the zeep and gSOAP byte styles (`setAttributes` with 60 attributes of ints, doubles and
//! strings; `createEntry` with 1, 100 and 10 000 entries), with 0, 1, 10, 50 and 100 % of the
//! values changed against the cached template. Also: the miss path (full parse + template
//! recording), the loop path (one entry more than the template), and the machine's memcmp
//! bandwidth in the same run (two equal buffers of the message's size compared, the
//! physical floor of any byte comparison).
//!
//! `cargo bench -p ardacat-soap --bench dds` (add `-- --quick` when time is short);
//! `DDS_PAIRED=1 cargo bench -p ardacat-soap --bench dds` prints interleaved minimum timings
//! instead (robust ratios on a shared machine).

#[path = "../tests/common/dds_gen.rs"]
mod dds_gen;

use std::hint::black_box;
use std::time::{Duration, Instant};

use ardacat_soap::dds::{DdsCache, DdsConfig, DdsOutcome, Template, TemplateKey};
use ardacat_soap::{Limits, Request, SoapVersion, parse_request};
use criterion::{BenchmarkId, Criterion, Throughput, criterion_group};
use dds_gen::*;

const V: SoapVersion = SoapVersion::V11;
const PCTS: [u32; 5] = [0, 1, 10, 50, 100];

/// A message family: name and request with `pct` percent of its values changed.
type Family = (&'static str, fn(u32) -> Request);

fn families() -> Vec<Family> {
    vec![
        ("setAttributes60", |p| set_attributes(60, p)),
        ("createEntry1", |p| create_entry(1, p)),
        ("createEntry100", |p| create_entry(100, p)),
        ("createEntry10k", |p| create_entry(10_000, p)),
    ]
}

fn style_name(s: Style) -> &'static str {
    match s {
        Style::Zeep => "zeep",
        Style::Gsoap => "gsoap",
        Style::Jaxws => "jaxws",
    }
}

fn primed(base: &[u8]) -> (DdsCache, TemplateKey) {
    let cache = DdsCache::new(DdsConfig::default());
    let key = TemplateKey::new("bench", V.content_type());
    let (_, o) = cache.parse(&key, base, V, &Limits::default()).unwrap();
    assert_eq!(o, DdsOutcome::Miss);
    (cache, key)
}

fn bench(c: &mut Criterion) {
    let limits = Limits::default();
    for (name, make) in families() {
        for style in [Style::Zeep, Style::Gsoap] {
            let base = message(style, V, &make(0));
            let group_name = format!("{name}/{}", style_name(style));
            let mut g = c.benchmark_group(&group_name);
            if base.len() > 100_000 {
                g.sample_size(10).warm_up_time(Duration::from_millis(500)).measurement_time(Duration::from_secs(3));
            } else {
                g.warm_up_time(Duration::from_millis(500)).measurement_time(Duration::from_secs(2));
            }
            let (cache, key) = primed(&base);
            let st = cache.stats();
            let t = Template::record(&base, V, &parse_request(&base, V, &limits).unwrap()).unwrap();
            eprintln!(
                "SIZE {group_name}: message {} B, template {} B ({} slots, loops: {})",
                base.len(),
                st.template_bytes,
                t.slot_count(),
                t.has_loops()
            );
            for pct in PCTS {
                let req = make(pct);
                let msg = message(style, V, &req);
                g.throughput(Throughput::Bytes(msg.len() as u64));
                // Both paths agree before anything is timed.
                let (p, o) = cache.parse(&key, &msg, V, &limits).unwrap();
                assert!(o.is_hit(), "{group_name} {pct}%: {o:?}");
                assert_eq!(p, parse_request(&msg, V, &limits).unwrap());
                g.bench_with_input(BenchmarkId::new("full", pct), &msg, |b, m| {
                    b.iter(|| parse_request(black_box(m), V, &limits).unwrap())
                });
                g.bench_with_input(BenchmarkId::new("dds", pct), &msg, |b, m| {
                    b.iter(|| cache.parse(&key, black_box(m), V, &limits).unwrap())
                });
            }
            // The machine's memcmp bandwidth on this message size (two equal, separate buffers).
            let (m1, m2) = (base.clone(), base.clone());
            g.throughput(Throughput::Bytes(base.len() as u64));
            g.bench_function(BenchmarkId::new("memcmp", 0), |b| {
                b.iter(|| black_box(black_box(&m1[..]) == black_box(&m2[..])))
            });
            // Floor of any hit: cloning the owned result the caller receives.
            let parsed = parse_request(&base, V, &limits).unwrap();
            g.throughput(Throughput::Bytes(base.len() as u64));
            g.bench_with_input(BenchmarkId::new("clone_result", 0), &parsed, |b, p| b.iter(|| black_box(p).clone()));
            // Miss: full parse plus template recording (what a decline costs on top).
            g.throughput(Throughput::Bytes(base.len() as u64));
            g.bench_with_input(BenchmarkId::new("miss", 0), &base, |b, m| {
                b.iter(|| {
                    let p = parse_request(black_box(m), V, &limits).unwrap();
                    Template::record(m, V, &p).unwrap()
                })
            });
            // Loop path: one more entry than the template (createEntry only), 10 % changed.
            if name.starts_with("createEntry") {
                let n = match name {
                    "createEntry1" => 1,
                    "createEntry100" => 100,
                    _ => 10_000,
                };
                let msg = message(style, V, &create_entry(n + 1, 10));
                g.throughput(Throughput::Bytes(msg.len() as u64));
                let (_, o) = cache.parse(&key, &msg, V, &limits).unwrap();
                assert!(matches!(o, DdsOutcome::Hit { loop_path: true, .. }), "{o:?}");
                g.bench_with_input(BenchmarkId::new("full_plus1", 10), &msg, |b, m| {
                    b.iter(|| parse_request(black_box(m), V, &limits).unwrap())
                });
                g.bench_with_input(BenchmarkId::new("dds_loop_plus1", 10), &msg, |b, m| {
                    b.iter(|| cache.parse(&key, black_box(m), V, &limits).unwrap())
                });
            }
            g.finish();
        }
    }
}

/// Load-robust ratios for a shared machine: the operations are interleaved round by round
/// and each one's minimum per-iteration time over the rounds is reported (other tenants only
/// ever add time). Run with `DDS_PAIRED=1 cargo bench -p ardacat-soap --bench dds`.
fn paired() {
    let limits = Limits::default();
    let time = |iters: u32, f: &mut dyn FnMut()| {
        let t = Instant::now();
        for _ in 0..iters {
            f();
        }
        t.elapsed().as_secs_f64() * 1e6 / f64::from(iters)
    };
    println!(
        "| family | style | size | changed | full parse | DDS hit | clone of result | miss (full + record) | full / DDS | DDS / clone | miss / full | DDS MB/s | memcmp MB/s |"
    );
    println!("|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|");
    for (name, make) in families() {
        for style in [Style::Zeep, Style::Gsoap] {
            let base = message(style, V, &make(0));
            let (cache, key) = primed(&base);
            let parsed = parse_request(&base, V, &limits).unwrap();
            let (m1, m2) = (base.clone(), base.clone());
            let iters = (2_000_000 / base.len()).clamp(1, 2000) as u32;
            let rounds = if base.len() > 1_000_000 { 9 } else { 25 };
            for pct in PCTS {
                let msg = message(style, V, &make(pct));
                assert!(cache.parse(&key, &msg, V, &limits).unwrap().1.is_hit());
                let mut best = [f64::MAX; 5];
                for _ in 0..rounds {
                    let t = [
                        time(iters, &mut || drop(black_box(parse_request(black_box(&msg), V, &limits).unwrap()))),
                        time(iters, &mut || drop(black_box(cache.parse(&key, black_box(&msg), V, &limits).unwrap()))),
                        time(iters, &mut || drop(black_box(black_box(&parsed).clone()))),
                        if pct == 0 {
                            time(iters, &mut || {
                                let p = parse_request(black_box(&base), V, &limits).unwrap();
                                drop(black_box(Template::record(&base, V, &p)));
                            })
                        } else {
                            f64::MAX
                        },
                        time(iters, &mut || {
                            black_box(black_box(&m1[..]) == black_box(&m2[..]));
                        }),
                    ];
                    for (b, t) in best.iter_mut().zip(t) {
                        *b = b.min(t);
                    }
                }
                let us = |t: f64| if t >= 1000.0 { format!("{:.2} ms", t / 1000.0) } else { format!("{t:.1} µs") };
                let miss = if pct == 0 { us(best[3]) } else { "".into() };
                let miss_ratio = if pct == 0 { format!("{:.2}", best[3] / best[0]) } else { "".into() };
                // Bytes per µs = MB/s.
                let mbs = |t: f64, len: usize| len as f64 / t;
                println!(
                    "| {name} | {} | {} B | {pct} % | {} | {} | {} | {miss} | **{:.1}×** | {:.2} | {miss_ratio} | {:.0} | {:.0} |",
                    style_name(style),
                    msg.len(),
                    us(best[0]),
                    us(best[1]),
                    us(best[2]),
                    best[0] / best[1],
                    best[1] / best[2],
                    mbs(best[1], msg.len()),
                    mbs(best[4], base.len()),
                );
            }
        }
    }
}

criterion_group!(benches, bench);

fn main() {
    if std::env::var_os("DDS_PAIRED").is_some() {
        paired();
        return;
    }
    benches();
    Criterion::default().configure_from_args().final_summary();
}
