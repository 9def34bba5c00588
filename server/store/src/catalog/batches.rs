//! Coalesces concurrent point reads of one shape into one statement (PostgreSQL): while a
//! statement of a shape runs, the reads of that shape that arrive queue, and when it ends the
//! next one reads every queued name at once (`t0.file = ANY($n)`, `sql::point::PointBatch`).
//! Owns only the queues and the hand-over; must not build SQL or hold connections (a read's
//! statement runs on the caller's own connection, through the closure it passes).
//!
//! Why: a point read's cost on PostgreSQL is mostly per statement (parse, bind, plan, execute,
//! round trip), not per row; under load, reading several entries in one statement is several
//! times cheaper per entry. At low load nothing changes: a read that finds its shape idle runs
//! its own statement at once.
//!
//! Rules:
//! - A shape has at most `max_running` statements running. A read that finds fewer starts one
//!   (for its own name); otherwise it queues.
//! - The reader whose statement ended (its [`Lead`] dropped) hands the lead to the first queued
//!   reader, with up to `max_names - 1` more queued names; that reader runs the statement for
//!   all of them and answers the others. The lead is handed on also when the reader's future is
//!   dropped mid-way (its unanswered names are queued again in front), so no queued read waits
//!   for a lead that no longer exists.
//! - A queued read is answered only by a statement that started after it queued, so it sees
//!   every write committed before it was asked (as its own statement would).
//! - An error of the statement is every name's error.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

use ardacat_core::types::Value;
use tokio::sync::oneshot;

use crate::error::StoreError;

type Row = Vec<Value>;
type Rows = Result<Vec<Row>, StoreError>;

/// What point reads share to share a statement: its text and every parameter but the name's.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct ShapeKey {
    pub sql: Arc<str>,
    pub params: Arc<[Value]>,
}

/// The coordinator of one store.
#[derive(Debug)]
pub(crate) struct PointBatches {
    max_names: usize,
    max_running: usize,
    shapes: Mutex<Vec<Shape>>,
    statements: AtomicU64,
    names: AtomicU64,
}

#[derive(Debug)]
struct Shape {
    key: ShapeKey,
    running: usize,
    waiting: VecDeque<Waiter>,
}

#[derive(Debug)]
struct Waiter {
    name: String,
    turn: oneshot::Sender<Turn>,
}

/// What a queued read is given: its rows, or the lead (run the statement for it and others).
enum Turn {
    Rows(Rows),
    Lead(Place),
}

impl std::fmt::Debug for Turn {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Turn::Rows(_) => "Rows",
            Turn::Lead(_) => "Lead",
        })
    }
}

/// What [`PointBatches::join`] gives a read.
pub(crate) enum Joined {
    Rows(Rows),
    Lead(Lead),
}

/// The lead of one statement: run it for `names`, then `finish`. Dropped unfinished (the
/// caller's future dropped), the reads it owed are queued again and the lead passes on.
pub(crate) struct Lead {
    names: Vec<String>,
    name_column: usize,
    /// `None` for a read run alone outside the shape's bookkeeping (`join`'s fallback).
    place: Option<Place>,
    batches: Arc<PointBatches>,
}

impl Lead {
    /// The names to read: distinct, the caller's own first.
    pub(crate) fn names(&self) -> &[String] {
        &self.names
    }

    /// Answer every read of this statement with its rows from `rows` (the statement's whole
    /// answer) and return the caller's own.
    pub(crate) fn finish(mut self, rows: Rows) -> Rows {
        self.batches.statements.fetch_add(1, Ordering::Relaxed);
        self.batches.names.fetch_add(self.names.len() as u64, Ordering::Relaxed);
        if let Some(mut place) = self.place.take() {
            // The place goes on first (the next statement may start), then the answers.
            let owed = std::mem::take(&mut place.owed);
            drop(place);
            for w in owed {
                let _ = w.turn.send(Turn::Rows(rows_of(&rows, &w.name, self.name_column)));
            }
        }
        rows_of(&rows, &self.names[0], self.name_column)
    }
}

/// One running statement's place in its shape. Dropping it hands the place on (`pass`).
struct Place {
    batches: Arc<PointBatches>,
    key: ShapeKey,
    /// Queued reads this statement answers (besides its runner's own).
    owed: Vec<Waiter>,
    /// False once its place was handed on another way (a lead that could not be delivered).
    armed: bool,
}

impl Drop for Place {
    fn drop(&mut self) {
        if self.armed {
            self.batches.pass(&self.key, std::mem::take(&mut self.owed));
        }
    }
}

/// Counts since the store opened (for tests and metrics).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct BatchStats {
    /// Statements run through the coordinator.
    pub statements: u64,
    /// Names those statements read (equal to `statements` when nothing was coalesced).
    pub names: u64,
}

impl PointBatches {
    /// `max_names`: names per statement at most (at least 1); `max_running`: statements of
    /// one shape running at once at most (at least 1).
    pub(crate) fn new(max_names: usize, max_running: usize) -> Arc<Self> {
        Arc::new(PointBatches {
            max_names: max_names.max(1),
            max_running: max_running.max(1),
            shapes: Mutex::new(Vec::new()),
            statements: AtomicU64::new(0),
            names: AtomicU64::new(0),
        })
    }

    pub(crate) fn max_names(&self) -> usize {
        self.max_names
    }

    pub(crate) fn stats(&self) -> BatchStats {
        BatchStats { statements: self.statements.load(Ordering::Relaxed), names: self.names.load(Ordering::Relaxed) }
    }

    fn lock(&self) -> MutexGuard<'_, Vec<Shape>> {
        // The lock guards plain bookkeeping that no panic leaves half done.
        self.shapes.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Join the reads of entry `name` of shape `key`: either its rows (a statement run by
    /// another reader answered it), or the lead: then the caller runs the shape's statement for
    /// [`Lead::names`] on its own connection and hands the outcome to [`Lead::finish`].
    /// `name_column` is the column of a row that holds its entry's name.
    pub(crate) async fn join(self: &Arc<Self>, key: ShapeKey, name: String, name_column: usize) -> Joined {
        let queued = {
            let mut shapes = self.lock();
            match shapes.iter_mut().find(|s| s.key == key) {
                Some(shape) if shape.running >= self.max_running => {
                    let (tx, rx) = oneshot::channel();
                    shape.waiting.push_back(Waiter { name: name.clone(), turn: tx });
                    Some(rx)
                }
                Some(shape) => {
                    shape.running += 1;
                    None
                }
                None => {
                    shapes.push(Shape { key: key.clone(), running: 1, waiting: VecDeque::new() });
                    None
                }
            }
        };
        let place = match queued {
            None => Place { batches: self.clone(), key, owed: Vec::new(), armed: true },
            Some(rx) => match rx.await {
                Ok(Turn::Rows(rows)) => return Joined::Rows(rows),
                Ok(Turn::Lead(place)) => place,
                // Every queued read is answered or given the lead (module rules); should that
                // ever fail, the read is still answered, by a statement of its own.
                Err(_) => {
                    return Joined::Lead(Lead { names: vec![name], name_column, place: None, batches: self.clone() });
                }
            },
        };
        let mut names = vec![name];
        for w in &place.owed {
            if !names.contains(&w.name) {
                names.push(w.name.clone());
            }
        }
        Joined::Lead(Lead { names, name_column, place: Some(place), batches: self.clone() })
    }

    /// A statement of `key` ended (or its runner went away with `owed` unanswered): give its
    /// place to the first queued read that still waits, with the names after it, or free the
    /// place when nobody waits.
    fn pass(self: &Arc<Self>, key: &ShapeKey, owed: Vec<Waiter>) {
        let mut shapes = self.lock();
        let Some(at) = shapes.iter().position(|s| &s.key == key) else { return };
        let shape = &mut shapes[at];
        for w in owed.into_iter().rev() {
            shape.waiting.push_front(w);
        }
        loop {
            // Reads whose caller went away need no answer.
            while shape.waiting.front().is_some_and(|w| w.turn.is_closed()) {
                shape.waiting.pop_front();
            }
            let Some(first) = shape.waiting.pop_front() else { break };
            let take = shape.waiting.len().min(self.max_names - 1);
            let owed: Vec<Waiter> = shape.waiting.drain(..take).collect();
            let place = Place { batches: self.clone(), key: key.clone(), owed, armed: true };
            match first.turn.send(Turn::Lead(place)) {
                Ok(()) => return,
                // Its caller went away just now: take the lead back without it being dropped
                // armed (which would call `pass` under this lock), and try the next one.
                Err(turn) => {
                    let Turn::Lead(mut place) = turn else { unreachable!("a lead was sent") };
                    place.armed = false;
                    for w in std::mem::take(&mut place.owed).into_iter().rev() {
                        shape.waiting.push_front(w);
                    }
                }
            }
        }
        shape.running -= 1;
        if shape.running == 0 {
            shapes.swap_remove(at);
        }
    }

    #[cfg(test)]
    fn shapes(&self) -> usize {
        self.lock().len()
    }
}

/// The rows of one name in a statement's answer (an error is every name's error).
fn rows_of(rows: &Rows, name: &str, name_column: usize) -> Rows {
    match rows {
        Ok(rows) => Ok(rows
            .iter()
            .filter(|r| matches!(r.get(name_column), Some(Value::Text(n)) if n == name))
            .cloned()
            .collect()),
        Err(e) => Err(e.clone()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;
    use tokio::sync::Semaphore;

    /// What a store's point read does with the coordinator: join, and run when leading.
    async fn read<F, R>(b: &Arc<PointBatches>, key: ShapeKey, name: String, run: F) -> Rows
    where
        F: FnOnce(Vec<String>) -> R,
        R: std::future::Future<Output = Rows>,
    {
        match b.join(key, name, 0).await {
            Joined::Rows(rows) => rows,
            Joined::Lead(lead) => {
                let rows = run(lead.names().to_vec()).await;
                lead.finish(rows)
            }
        }
    }

    fn key(n: u8) -> ShapeKey {
        ShapeKey { sql: format!("statement {n}").into(), params: vec![Value::Null].into() }
    }

    /// A fake table: entry `e<i>` has the row `[e<i>, i]`; `i` ≥ 1000 does not exist.
    fn table(names: &[String]) -> Vec<Row> {
        names
            .iter()
            .filter_map(|n| {
                let i: i64 = n.strip_prefix('e')?.parse().ok()?;
                (i < 1000).then(|| vec![Value::Text(n.clone()), Value::Int(i)])
            })
            .collect()
    }

    /// Many concurrent reads of one shape, each statement slow: every read gets exactly its own
    /// row, statements hold several names, and no statement holds more than `max_names`.
    #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
    async fn concurrent_reads_share_statements_and_get_their_own_rows() {
        let batches = PointBatches::new(8, 1);
        let widest = Arc::new(AtomicU64::new(0));
        let mut tasks = Vec::new();
        for i in 0..200u32 {
            let (batches, widest) = (batches.clone(), widest.clone());
            tasks.push(tokio::spawn(async move {
                let name = format!("e{}", i % 150 + if i % 7 == 0 { 1000 } else { 0 });
                let rows = read(&batches, key(1), name.clone(), move |names: Vec<String>| async move {
                    widest.fetch_max(names.len() as u64, Ordering::Relaxed);
                    tokio::time::sleep(Duration::from_millis(2)).await;
                    Ok(table(&names))
                })
                .await
                .unwrap();
                (name, rows)
            }));
        }
        for t in tasks {
            let (name, rows) = t.await.unwrap();
            assert_eq!(rows, table(std::slice::from_ref(&name)), "{name}");
        }
        let stats = batches.stats();
        assert!(stats.statements < 100, "{stats:?}: reads were not coalesced");
        assert!(widest.load(Ordering::Relaxed) <= 8, "a statement held more than max_names");
        assert_eq!(batches.shapes(), 0, "an idle shape is forgotten");
    }

    /// A read alone runs at once with its own name only; shapes do not mix.
    #[tokio::test]
    async fn an_idle_shape_runs_at_once_and_shapes_do_not_mix() {
        let batches = PointBatches::new(8, 1);
        let gate = Arc::new(Semaphore::new(0));
        let g = gate.clone();
        let b = batches.clone();
        let slow = tokio::spawn(async move {
            read(&b, key(1), "e1".into(), move |names: Vec<String>| async move {
                let _permit = g.acquire().await.unwrap();
                Ok(table(&names))
            })
            .await
        });
        tokio::task::yield_now().await;
        // Shape 2 is idle although shape 1 is busy.
        let other = read(&batches, key(2), "e2".into(), move |names: Vec<String>| async move { Ok(table(&names)) })
            .await
            .unwrap();
        assert_eq!(other, table(&["e2".into()]));
        gate.add_permits(1);
        assert_eq!(slow.await.unwrap().unwrap(), table(&["e1".into()]));
        assert_eq!(batches.stats(), BatchStats { statements: 2, names: 2 });
    }

    /// A read queued behind a running statement is not answered by it (it may have asked after
    /// that statement's snapshot) but by the next one; an error reaches every name of its
    /// statement; duplicate names each get the row.
    #[tokio::test]
    async fn queued_reads_get_the_next_statement_and_its_errors() {
        let batches = PointBatches::new(8, 1);
        let gate = Arc::new(Semaphore::new(0));
        let seen: Arc<Mutex<Vec<Vec<String>>>> = Arc::default();
        let spawn = |name: &str, fail: bool| {
            let (b, g, seen, name) = (batches.clone(), gate.clone(), seen.clone(), name.to_string());
            tokio::spawn(async move {
                read(&b, key(1), name, move |names: Vec<String>| async move {
                    seen.lock().unwrap().push(names.clone());
                    let _permit = g.acquire().await.unwrap();
                    if fail { Err(StoreError::Timeout) } else { Ok(table(&names)) }
                })
                .await
            })
        };
        let first = spawn("e1", false);
        tokio::time::sleep(Duration::from_millis(20)).await;
        // These queue; the first of them will run them all and fail.
        let queued: Vec<_> = ["e2", "e3", "e2"].into_iter().map(|n| spawn(n, true)).collect();
        tokio::time::sleep(Duration::from_millis(20)).await;
        assert_eq!(seen.lock().unwrap().clone(), vec![vec!["e1".to_string()]]);
        gate.add_permits(10);
        assert_eq!(first.await.unwrap().unwrap(), table(&["e1".into()]));
        for q in queued {
            assert!(matches!(q.await.unwrap(), Err(StoreError::Timeout)));
        }
        assert_eq!(seen.lock().unwrap().clone(), vec![vec!["e1".to_string()], vec!["e2".into(), "e3".into()]]);

        // Duplicates, answered.
        let gate2 = Arc::new(Semaphore::new(0));
        let b = batches.clone();
        let g = gate2.clone();
        let blocker = tokio::spawn(async move {
            read(&b, key(1), "e9".into(), move |names: Vec<String>| async move {
                let _p = g.acquire().await.unwrap();
                Ok(table(&names))
            })
            .await
        });
        tokio::time::sleep(Duration::from_millis(20)).await;
        let dups: Vec<_> = (0..3)
            .map(|_| {
                let b = batches.clone();
                tokio::spawn(async move {
                    read(&b, key(1), "e4".into(), move |names: Vec<String>| async move { Ok(table(&names)) }).await
                })
            })
            .collect();
        tokio::time::sleep(Duration::from_millis(20)).await;
        gate2.add_permits(1);
        blocker.await.unwrap().unwrap();
        for d in dups {
            assert_eq!(d.await.unwrap().unwrap(), table(&["e4".into()]));
        }
        assert_eq!(batches.shapes(), 0);
    }

    /// A runner cancelled mid-statement, and queued readers cancelled while waiting: the lead
    /// passes on, every read still waiting is answered, and the shape is forgotten.
    #[tokio::test]
    async fn cancelled_readers_never_leave_others_waiting() {
        let batches = PointBatches::new(4, 1);
        let never = Arc::new(Semaphore::new(0));
        let b = batches.clone();
        let n = never.clone();
        let stuck = tokio::spawn(async move {
            read(&b, key(1), "e1".into(), move |_: Vec<String>| async move {
                let _p = n.acquire().await.unwrap();
                unreachable!("never released")
            })
            .await
        });
        tokio::time::sleep(Duration::from_millis(20)).await;
        // Queued: a reader that will itself get stuck as a runner, readers cancelled while
        // queued, and readers that must be answered.
        let b = batches.clone();
        let n = never.clone();
        let stuck_next = tokio::spawn(async move {
            read(&b, key(1), "e2".into(), move |_: Vec<String>| async move {
                let _p = n.acquire().await.unwrap();
                unreachable!("never released")
            })
            .await
        });
        tokio::time::sleep(Duration::from_millis(5)).await;
        let mut cancelled = Vec::new();
        let mut answered = Vec::new();
        for i in 3..13 {
            let b = batches.clone();
            let t = tokio::spawn(async move {
                let name = format!("e{i}");
                read(&b, key(1), name, move |names: Vec<String>| async move { Ok(table(&names)) }).await
            });
            if i % 3 == 0 { cancelled.push(t) } else { answered.push((i, t)) }
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
        for t in &cancelled {
            t.abort();
        }
        stuck.abort();
        tokio::time::sleep(Duration::from_millis(20)).await;
        // e2's reader leads now (with up to three names); cancel it mid-statement too.
        stuck_next.abort();
        for (i, t) in answered {
            let rows = tokio::time::timeout(Duration::from_secs(5), t).await.expect("a read was left waiting");
            assert_eq!(rows.unwrap().unwrap(), table(&[format!("e{i}")]));
        }
        assert_eq!(batches.shapes(), 0, "the shape's places were all given back");
    }

    /// `max_running` statements of a shape run at once before reads queue.
    #[tokio::test]
    async fn max_running_statements_run_before_reads_queue() {
        let batches = PointBatches::new(8, 2);
        let gate = Arc::new(Semaphore::new(0));
        let running = Arc::new(AtomicU64::new(0));
        let mut tasks = Vec::new();
        for i in 0..6 {
            let (b, g, r) = (batches.clone(), gate.clone(), running.clone());
            tasks.push(tokio::spawn(async move {
                read(&b, key(1), format!("e{i}"), move |names: Vec<String>| async move {
                    r.fetch_add(1, Ordering::SeqCst);
                    let _p = g.acquire().await.unwrap();
                    Ok(table(&names))
                })
                .await
            }));
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        assert_eq!(running.load(Ordering::SeqCst), 2);
        gate.add_permits(100);
        for (i, t) in tasks.into_iter().enumerate() {
            assert_eq!(t.await.unwrap().unwrap(), table(&[format!("e{i}")]));
        }
        // Two alone, then the four queued reads in at most two statements.
        let stats = batches.stats();
        assert_eq!(stats.names, 6);
        assert!(stats.statements <= 4, "{stats:?}");
    }
}
