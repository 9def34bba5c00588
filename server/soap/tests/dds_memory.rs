//! DDS template memory: the bytes a template accounts for (what the cache's `max_bytes` cap
//! is checked against) cover every byte it really holds, measured with a counting global
//! allocator, and stay within twice the message size for the benchmark families
//! (`setAttributes` of 60 attributes, `createEntry` of 1, 100 and 10 000 entries) in the
//! zeep and gSOAP byte styles. Deterministic accounting, no timing. One test function, so no
//! other test thread allocates while a template is measured.

#[path = "common/dds_gen.rs"]
mod dds_gen;

use std::alloc::System;

use ardacat_soap::dds::Template;
use ardacat_soap::{Limits, Request, SoapVersion, parse_request};
use dds_gen::*;
use stats_alloc::{INSTRUMENTED_SYSTEM, Region, StatsAlloc};

#[global_allocator]
static GLOBAL: &StatsAlloc<System> = &INSTRUMENTED_SYSTEM;

const V: SoapVersion = SoapVersion::V11;

/// What `f` returned, and the heap bytes and blocks still allocated after it returned.
fn held<T>(f: impl FnOnce() -> T) -> (T, isize, isize) {
    let region = Region::new(GLOBAL);
    let out = f();
    let c = region.change();
    (out, c.bytes_allocated as isize - c.bytes_deallocated as isize, c.allocations as isize - c.deallocations as isize)
}

#[test]
fn template_memory_is_fully_accounted_and_at_most_twice_the_message() {
    let families: [(&str, Request); 4] = [
        ("setAttributes60", set_attributes(60, 0)),
        ("createEntry1", create_entry(1, 0)),
        ("createEntry100", create_entry(100, 0)),
        ("createEntry10k", create_entry(10_000, 0)),
    ];
    let mut report = String::new();
    for (name, req) in &families {
        for style in [Style::Zeep, Style::Gsoap] {
            let msg = message(style, V, req);
            let parsed = parse_request(&msg, V, &Limits::default()).unwrap();
            let (t, heap, blocks) = held(|| Template::record(&msg, V, &parsed).expect("templatable"));
            let heap = usize::try_from(heap).unwrap();
            let real = heap + std::mem::size_of::<Template>();
            let accounted = t.memory_bytes();
            report.push_str(&format!(
                "{name} {style:?}: message {} B, template holds {real} B (heap {heap} B in {blocks} blocks), \
                 accounts {accounted} B ({:.2}x the message), {} slots\n",
                msg.len(),
                accounted as f64 / msg.len() as f64,
                t.slot_count()
            ));
            assert!(accounted >= real, "{name} {style:?}: accounts {accounted} B but holds {real} B");
            assert!(
                accounted <= 2 * msg.len(),
                "{name} {style:?}: template of {accounted} B for a message of {} B",
                msg.len()
            );
            drop(t);
        }
    }
    eprint!("{report}");
}
