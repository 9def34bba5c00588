//! The DDS template cache: templates per (client identity, operation body QName,
//! Content-Type) (at most two per key and operation, told apart by their bytes up to the
//! operation element's start tag), LRU-evicted under a global byte cap and a template-count cap, expired after
//! an idle period, sharded behind std mutexes. Owns the request flow (fast path, fallback to
//! the full parser, template refresh, back-off, shadow checking) and the counters. Must not
//! decide any result itself: results come from [`Template::fast_parse`] or
//! [`crate::parse_request`], and in shadow mode every fast result is checked against the
//! latter.

use std::collections::hash_map::DefaultHasher;
use std::collections::{BTreeMap, HashMap};
use std::hash::{Hash, Hasher};
use std::sync::atomic::{AtomicU32, AtomicU64, AtomicUsize, Ordering::Relaxed};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use super::template::Template;
use super::{DdsOutcome, DeclineReason};
use crate::error::SoapError;
use crate::model::{Operation, ParsedRequest};
use crate::parse::{Limits, parse_request};
use crate::version::SoapVersion;

/// Who sent a message and how: the client identity (authenticated subject, or peer address
/// for anonymous clients) and the request's `Content-Type` header as sent (its `action`
/// parameter included). The third part of the cache key, the operation's body QName, is
/// taken from the message: each key holds at most one template per operation, selected by the
/// bytes up to the end of the operation element's start tag.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct TemplateKey {
    pub client: String,
    pub content_type: String,
}

impl TemplateKey {
    pub fn new(client: impl Into<String>, content_type: impl Into<String>) -> Self {
        TemplateKey { client: client.into(), content_type: content_type.into() }
    }
}

/// What the shadow check does when the fast path and the full parser disagree.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ShadowPolicy {
    /// Panic with both results and the message (tests, staging).
    Panic,
    /// Return [`SoapError::Unserializable`] (a `Server`/`Receiver` fault, HTTP 500) naming
    /// the disagreement; the mismatch is counted in [`DdsStats::shadow_mismatches`].
    Fault,
}

/// Cache configuration.
#[derive(Debug, Clone)]
pub struct DdsConfig {
    /// Global cap on template memory (message copies, slot tables, cached requests).
    pub max_bytes: usize,
    /// Global cap on the number of templates.
    pub max_templates: usize,
    /// Templates unused for this long are dropped.
    pub idle: Duration,
    /// Number of independently locked shards (≥ 1). The caps are global.
    pub shards: usize,
    /// Run the full parser on every fast-path hit too and compare.
    pub shadow: bool,
    /// What a shadow mismatch does.
    pub shadow_policy: ShadowPolicy,
    /// After this many consecutive declines for one template, skip the fast path for a
    /// doubling number of requests (2, 4, … up to 64). 0 disables back-off.
    pub backoff_after: u32,
}

impl Default for DdsConfig {
    fn default() -> Self {
        DdsConfig {
            max_bytes: 64 << 20,
            max_templates: 4096,
            idle: Duration::from_secs(600),
            shards: 8,
            shadow: false,
            shadow_policy: ShadowPolicy::Panic,
            backoff_after: 4,
        }
    }
}

/// A snapshot of the cache counters.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct DdsStats {
    /// Requests answered by the fast path.
    pub hits: u64,
    /// Of those, answered through the loop program (item counts differed).
    pub loop_hits: u64,
    /// Requests without a template (full parse, template recorded).
    pub misses: u64,
    /// Fast-path declines, by reason, in [`DeclineReason::ALL`] order.
    pub declines: Vec<(DeclineReason, u64)>,
    /// Requests that skipped the fast path (back-off, untemplatable messages).
    pub bypassed: u64,
    /// Requests the full parser rejected (after a decline, a miss or a bypass).
    pub full_parse_errors: u64,
    /// Message bytes compared but never tokenized, summed over hits.
    pub bytes_skipped: u64,
    /// Message bytes of all hits.
    pub bytes_hit: u64,
    /// Changed slots converted on hits.
    pub changed_slots: u64,
    /// Templates recorded (misses and refreshes).
    pub templates_recorded: u64,
    /// Accepted messages that could not be templated (UTF-16, or larger than a shard's cap).
    pub unrecordable: u64,
    /// Templates evicted for the caps.
    pub evictions: u64,
    /// Templates dropped after the idle period.
    pub expirations: u64,
    /// Templates now cached, and their memory.
    pub templates: usize,
    pub template_bytes: usize,
    /// Shadow comparisons run, and disagreements found.
    pub shadow_checks: u64,
    pub shadow_mismatches: u64,
}

impl DdsStats {
    /// Declines for one reason.
    pub fn declines_for(&self, reason: DeclineReason) -> u64 {
        self.declines.iter().find(|(r, _)| *r == reason).map_or(0, |(_, n)| *n)
    }

    /// All declines.
    pub fn declines_total(&self) -> u64 {
        self.declines.iter().map(|(_, n)| n).sum()
    }
}

#[derive(Default)]
struct Counters {
    hits: AtomicU64,
    loop_hits: AtomicU64,
    misses: AtomicU64,
    declines: [AtomicU64; DeclineReason::ALL.len()],
    bypassed: AtomicU64,
    full_parse_errors: AtomicU64,
    bytes_skipped: AtomicU64,
    bytes_hit: AtomicU64,
    changed_slots: AtomicU64,
    templates_recorded: AtomicU64,
    unrecordable: AtomicU64,
    evictions: AtomicU64,
    expirations: AtomicU64,
    shadow_checks: AtomicU64,
    shadow_mismatches: AtomicU64,
    /// Global totals the caps apply to.
    bytes: AtomicUsize,
    count: AtomicUsize,
}

/// Decline streak of one (key, operation), kept across template refreshes.
#[derive(Default)]
struct Health {
    streak: AtomicU32,
    skip: AtomicU32,
}

struct Cached {
    op: Operation,
    tpl: Arc<Template>,
    health: Arc<Health>,
    tick: u64,
    last_used: Instant,
}

#[derive(Default)]
struct Shard {
    map: HashMap<Arc<TemplateKey>, Vec<Cached>>,
    /// LRU order: tick → key of the entry with that tick.
    lru: BTreeMap<u64, Arc<TemplateKey>>,
    bytes: usize,
    count: usize,
    next_tick: u64,
}

enum Found {
    Template(Arc<Template>, Arc<Health>),
    Skip,
    Nothing,
}

/// Templates kept per (key, operation): a client may alternate between a couple of byte
/// patterns for one operation (e.g. with and without a header).
const PER_OPERATION: usize = 2;

impl Shard {
    fn lookup(&mut self, key: &TemplateKey, body: &[u8], now: Instant, idle: Duration, c: &Counters) -> Found {
        let Some(list) = self.map.get_mut(key) else { return Found::Nothing };
        let Some(pos) = list.iter().position(|e| e.tpl.selects(body)) else { return Found::Nothing };
        if now.saturating_duration_since(list[pos].last_used) > idle {
            let tick = list[pos].tick;
            self.remove(key, tick, c);
            c.expirations.fetch_add(1, Relaxed);
            return Found::Nothing;
        }
        let e = &mut list[pos];
        if e.health.skip.load(Relaxed) > 0 {
            e.health.skip.fetch_sub(1, Relaxed);
            return Found::Skip;
        }
        let tick = self.next_tick;
        self.next_tick += 1;
        if let Some(v) = self.lru.remove(&e.tick) {
            self.lru.insert(tick, v);
        }
        e.tick = tick;
        e.last_used = now;
        Found::Template(e.tpl.clone(), e.health.clone())
    }

    /// Removes the entry of `key` with LRU tick `tick`.
    fn remove(&mut self, key: &TemplateKey, tick: u64, c: &Counters) -> bool {
        let Some(list) = self.map.get_mut(key) else { return false };
        let Some(pos) = list.iter().position(|e| e.tick == tick) else { return false };
        let e = list.swap_remove(pos);
        if list.is_empty() {
            self.map.remove(key);
        }
        self.lru.remove(&e.tick);
        self.bytes -= e.tpl.memory_bytes();
        self.count -= 1;
        c.bytes.fetch_sub(e.tpl.memory_bytes(), Relaxed);
        c.count.fetch_sub(1, Relaxed);
        true
    }

    /// Evicts this shard's least recently used entry, except the one with tick `keep`.
    fn evict_one(&mut self, keep: u64, c: &Counters) -> bool {
        let Some((&t, k)) = self.lru.iter().find(|(t, _)| **t != keep) else { return false };
        let k = k.clone();
        let removed = self.remove(&k, t, c);
        if removed {
            c.evictions.fetch_add(1, Relaxed);
        }
        removed
    }

    /// The decline streak of the template this message selected (if still cached).
    fn health(&self, key: &TemplateKey, tpl: &Template) -> Option<Arc<Health>> {
        self.map
            .get(key)?
            .iter()
            .find(|e| e.op == tpl.operation() && e.tpl.same_selector(tpl))
            .map(|e| e.health.clone())
    }

    #[allow(clippy::too_many_arguments)]
    fn insert(
        &mut self,
        key: &TemplateKey,
        tpl: Arc<Template>,
        health: Arc<Health>,
        now: Instant,
        max_bytes: usize,
        max_count: usize,
        idle: Duration,
        c: &Counters,
    ) {
        let op = tpl.operation();
        // Replace the template with the same selecting prefix; keep at most PER_OPERATION
        // per operation (dropping the least recently used).
        if let Some(list) = self.map.get(key) {
            let same: Vec<u64> =
                list.iter().filter(|e| e.op == op && e.tpl.same_selector(&tpl)).map(|e| e.tick).collect();
            for t in same {
                self.remove(key, t, c);
            }
        }
        while let Some(oldest) = self
            .map
            .get(key)
            .filter(|l| l.iter().filter(|e| e.op == op).count() >= PER_OPERATION)
            .and_then(|l| l.iter().filter(|e| e.op == op).map(|e| e.tick).min())
        {
            self.remove(key, oldest, c);
        }
        let tick = self.next_tick;
        self.next_tick += 1;
        let arc_key = match self.map.get_key_value(key) {
            Some((k, _)) => k.clone(),
            None => Arc::new(key.clone()),
        };
        self.bytes += tpl.memory_bytes();
        self.count += 1;
        c.bytes.fetch_add(tpl.memory_bytes(), Relaxed);
        c.count.fetch_add(1, Relaxed);
        self.map.entry(arc_key.clone()).or_default().push(Cached { op, tpl, health, tick, last_used: now });
        self.lru.insert(tick, arc_key);
        // Idle ones first (they are at the LRU front), then whatever the global caps need
        // from this shard (never the new entry); other shards are asked afterwards.
        while let Some((&t, k)) = self.lru.first_key_value() {
            if t == tick {
                break;
            }
            let expired = self
                .map
                .get(&**k)
                .and_then(|l| l.iter().find(|e| e.tick == t))
                .is_some_and(|e| now.saturating_duration_since(e.last_used) > idle);
            if !expired {
                break;
            }
            let k = k.clone();
            self.remove(&k, t, c);
            c.expirations.fetch_add(1, Relaxed);
        }
        while over(c, max_bytes, max_count) && self.evict_one(tick, c) {}
    }
}

fn over(c: &Counters, max_bytes: usize, max_count: usize) -> bool {
    c.bytes.load(Relaxed) > max_bytes || c.count.load(Relaxed) > max_count
}

/// A thread-safe DDS template cache in front of [`crate::parse_request`].
pub struct DdsCache {
    cfg: DdsConfig,
    shards: Vec<Mutex<Shard>>,
    c: Counters,
}

impl std::fmt::Debug for DdsCache {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DdsCache").field("cfg", &self.cfg).field("stats", &self.stats()).finish()
    }
}

fn lock(m: &Mutex<Shard>) -> MutexGuard<'_, Shard> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

impl DdsCache {
    pub fn new(cfg: DdsConfig) -> Self {
        let n = cfg.shards.max(1);
        let shards = (0..n).map(|_| Mutex::new(Shard::default())).collect();
        DdsCache { cfg, shards, c: Counters::default() }
    }

    /// The configuration.
    pub fn config(&self) -> &DdsConfig {
        &self.cfg
    }

    fn shard_index(&self, key: &TemplateKey) -> usize {
        let mut h = DefaultHasher::new();
        key.hash(&mut h);
        (h.finish() % self.shards.len() as u64) as usize
    }

    fn shard(&self, key: &TemplateKey) -> &Mutex<Shard> {
        &self.shards[self.shard_index(key)]
    }

    /// Parses a request: the fast path when a template for this client, operation and
    /// Content-Type matches, else the full parser (recording a fresh template). The result
    /// is always exactly what [`crate::parse_request`] returns for `body`; errors are the
    /// full parser's own.
    pub fn parse(
        &self,
        key: &TemplateKey,
        body: &[u8],
        version: SoapVersion,
        limits: &Limits,
    ) -> Result<(ParsedRequest, DdsOutcome), SoapError> {
        self.parse_checked(key, body, version, limits, || Ok(()))
    }

    /// [`DdsCache::parse`] with a check that must pass before the full parser runs (its error
    /// is the answer then): what a caller has to establish about a message before parsing it
    /// fully, and need not establish again for a hit, because a hit's bytes before its first
    /// value slot are those of a message that passed the check under the same key (a slot
    /// starts after the root element's start tag; everything before it is a static run). The
    /// server sniffs the envelope's version here ([`crate::detect_version`]).
    pub fn parse_checked(
        &self,
        key: &TemplateKey,
        body: &[u8],
        version: SoapVersion,
        limits: &Limits,
        check: impl FnOnce() -> Result<(), SoapError>,
    ) -> Result<(ParsedRequest, DdsOutcome), SoapError> {
        let now = Instant::now();
        let shard = self.shard(key);
        let found = lock(shard).lookup(key, body, now, self.cfg.idle, &self.c);
        let mut declined: Option<(DeclineReason, Arc<Health>)> = None;
        match found {
            Found::Template(tpl, health) => match tpl.fast_parse(body, version, limits) {
                Ok((pr, hit)) => {
                    health.streak.store(0, Relaxed);
                    self.c.hits.fetch_add(1, Relaxed);
                    if hit.loop_path {
                        self.c.loop_hits.fetch_add(1, Relaxed);
                    }
                    self.c.bytes_hit.fetch_add(body.len() as u64, Relaxed);
                    self.c.bytes_skipped.fetch_add(hit.bytes_skipped as u64, Relaxed);
                    self.c.changed_slots.fetch_add(hit.changed_slots as u64, Relaxed);
                    if self.cfg.shadow {
                        self.shadow_check(body, version, limits, &pr)?;
                    }
                    return Ok((pr, DdsOutcome::Hit { changed_slots: hit.changed_slots, loop_path: hit.loop_path }));
                }
                Err(reason) => {
                    self.c.declines[reason.index()].fetch_add(1, Relaxed);
                    declined = Some((reason, health));
                }
            },
            Found::Skip => {
                self.c.bypassed.fetch_add(1, Relaxed);
                check()?;
                return self.full(body, version, limits).map(|pr| (pr, DdsOutcome::Bypassed));
            }
            Found::Nothing => {}
        }
        check()?;
        let pr = self.full(body, version, limits)?;
        let outcome = match &declined {
            Some((reason, health)) => {
                let streak = health.streak.fetch_add(1, Relaxed) + 1;
                let after = self.cfg.backoff_after;
                if after > 0 && streak >= after {
                    health.skip.store(1u32 << (streak - after + 1).min(6), Relaxed);
                }
                DdsOutcome::Declined(*reason)
            }
            None => {
                self.c.misses.fetch_add(1, Relaxed);
                DdsOutcome::Miss
            }
        };
        self.record(key, body, version, &pr, now, declined.map(|(_, h)| h));
        Ok((pr, outcome))
    }

    fn full(&self, body: &[u8], version: SoapVersion, limits: &Limits) -> Result<ParsedRequest, SoapError> {
        parse_request(body, version, limits).inspect_err(|_| {
            self.c.full_parse_errors.fetch_add(1, Relaxed);
        })
    }

    fn record(
        &self,
        key: &TemplateKey,
        body: &[u8],
        version: SoapVersion,
        pr: &ParsedRequest,
        now: Instant,
        health: Option<Arc<Health>>,
    ) {
        let Some(tpl) = Template::record(body, version, pr) else {
            self.c.unrecordable.fetch_add(1, Relaxed);
            return;
        };
        let (max_bytes, max_count) = (self.cfg.max_bytes, self.cfg.max_templates.max(1));
        if tpl.memory_bytes() > max_bytes {
            self.c.unrecordable.fetch_add(1, Relaxed);
            return;
        }
        self.c.templates_recorded.fetch_add(1, Relaxed);
        let home = self.shard_index(key);
        {
            let mut shard = lock(&self.shards[home]);
            let health = health.or_else(|| shard.health(key, &tpl)).unwrap_or_default();
            shard.insert(key, Arc::new(tpl), health, now, max_bytes, max_count, self.cfg.idle, &self.c);
        }
        // Still over the global caps: take least recently used entries from the other shards,
        // one lock at a time.
        let n = self.shards.len();
        while over(&self.c, max_bytes, max_count) {
            let mut freed = false;
            for k in 1..n {
                if !over(&self.c, max_bytes, max_count) {
                    break;
                }
                freed |= lock(&self.shards[(home + k) % n]).evict_one(u64::MAX, &self.c);
            }
            if !freed {
                break;
            }
        }
    }

    fn shadow_check(
        &self,
        body: &[u8],
        version: SoapVersion,
        limits: &Limits,
        fast: &ParsedRequest,
    ) -> Result<(), SoapError> {
        self.c.shadow_checks.fetch_add(1, Relaxed);
        let full = parse_request(body, version, limits);
        if full.as_ref() == Ok(fast) {
            return Ok(());
        }
        self.c.shadow_mismatches.fetch_add(1, Relaxed);
        let msg = format!(
            "DDS shadow check failed: fast path returned {fast:?}, full parser returned {full:?} for {} bytes",
            body.len()
        );
        match self.cfg.shadow_policy {
            ShadowPolicy::Panic => panic!("{msg}\n--- message ---\n{}", String::from_utf8_lossy(body)),
            ShadowPolicy::Fault => Err(SoapError::Unserializable(format!("internal error: {msg}"))),
        }
    }

    /// Drops templates idle for longer than [`DdsConfig::idle`]; returns how many.
    pub fn purge_idle(&self) -> usize {
        let now = Instant::now();
        let mut n = 0;
        for s in &self.shards {
            let mut g = lock(s);
            let stale: Vec<(Arc<TemplateKey>, u64)> = g
                .map
                .iter()
                .flat_map(|(k, l)| {
                    l.iter()
                        .filter(|e| now.saturating_duration_since(e.last_used) > self.cfg.idle)
                        .map(|e| (k.clone(), e.tick))
                })
                .collect();
            for (k, tick) in stale {
                if g.remove(&k, tick, &self.c) {
                    n += 1;
                }
            }
        }
        self.c.expirations.fetch_add(n as u64, Relaxed);
        n
    }

    /// Drops every template (counters are kept).
    pub fn clear(&self) {
        for s in &self.shards {
            let mut g = lock(s);
            self.c.bytes.fetch_sub(g.bytes, Relaxed);
            self.c.count.fetch_sub(g.count, Relaxed);
            *g = Shard::default();
        }
    }

    /// A snapshot of the counters.
    pub fn stats(&self) -> DdsStats {
        let (mut templates, mut template_bytes) = (0, 0);
        for s in &self.shards {
            let g = lock(s);
            templates += g.count;
            template_bytes += g.bytes;
        }
        let c = &self.c;
        DdsStats {
            hits: c.hits.load(Relaxed),
            loop_hits: c.loop_hits.load(Relaxed),
            misses: c.misses.load(Relaxed),
            declines: DeclineReason::ALL.iter().map(|r| (*r, c.declines[r.index()].load(Relaxed))).collect(),
            bypassed: c.bypassed.load(Relaxed),
            full_parse_errors: c.full_parse_errors.load(Relaxed),
            bytes_skipped: c.bytes_skipped.load(Relaxed),
            bytes_hit: c.bytes_hit.load(Relaxed),
            changed_slots: c.changed_slots.load(Relaxed),
            templates_recorded: c.templates_recorded.load(Relaxed),
            unrecordable: c.unrecordable.load(Relaxed),
            evictions: c.evictions.load(Relaxed),
            expirations: c.expirations.load(Relaxed),
            templates,
            template_bytes,
            shadow_checks: c.shadow_checks.load(Relaxed),
            shadow_mismatches: c.shadow_mismatches.load(Relaxed),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cache_is_send_and_sync() {
        fn assert<T: Send + Sync>() {}
        assert::<DdsCache>();
        assert::<Template>();
    }
}
