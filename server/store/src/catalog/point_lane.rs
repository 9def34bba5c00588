//! Point reads of one template answered together (PostgreSQL): at most `limit` statements of a
//! template run at once; the reads of it that arrive meanwhile wait in its queue, and when a
//! statement ends, the first of them runs one statement for the queue (up to
//! [`MAX_BATCH`] names, `t0.file IN (…)`: `sql::point::PointBatch`) and hands each waiting read
//! its rows. Under load a `get` then costs a fraction of a round trip to PostgreSQL and of
//! PostgreSQL's per-statement work instead of one of each (docs/benchmarks.md, round 22); a read
//! that finds fewer than `limit` statements running runs its own statement at once, as before.
//!
//! A waiting read gives its database connection back to the pool ([`LaneConn::release`]), so
//! that a queue does not hold connections idle; the connection of a statement that ended goes
//! with the lead to the next leader ([`LaneConn::hand_over`]), so the queue never waits for the
//! pool either.
//!
//! Owns the queues and who runs what; must not build SQL (the statements come from the
//! template) nor run anything itself: the caller's `run` does, on the caller's connection. A
//! read whose future is dropped (a cancelled command) never strands the others: a waiting one
//! that was just made leader, or a leader whose statement had not answered, passes the queue on.

use std::sync::{Arc, Mutex};

use ardacat_core::types::Value;
use foldhash::HashMap;
use tokio::sync::oneshot;

use crate::error::StoreError;
use crate::sql::point::{MAX_BATCH, PointBatch};

/// Rows of a point read (the template's columns and keys).
pub(crate) type Rows = Vec<Vec<Value>>;

/// What a leader is asked to run.
pub(crate) enum Run {
    /// Its own statement (nobody else is served by it).
    Own,
    /// A batch statement: the leader's name and the others' in its parameters.
    Batch { sql: Arc<str>, params: Vec<Value> },
}

/// What the lane needs of a read's connection (`exec::Conn`).
pub(crate) trait LaneConn: Sized + Send {
    /// Give the database connection back to the pool for now (the read is about to wait).
    fn release(&mut self);
    /// The database connection, moved out for the next leader (`None`: it cannot move).
    fn hand_over(&mut self) -> Option<Self>;
    /// Use the connection `other` handed over.
    fn take_over(&mut self, other: Self);
}

impl LaneConn for crate::exec::Conn {
    fn release(&mut self) {
        crate::exec::Conn::release(self)
    }
    fn hand_over(&mut self) -> Option<Self> {
        crate::exec::Conn::hand_over(self)
    }
    fn take_over(&mut self, other: Self) {
        crate::exec::Conn::take_over(self, other)
    }
}

/// The queues of a store's templates.
pub(crate) struct PointLane<C> {
    /// Statements of one template running at once at most; 0: no batching at all.
    limit: usize,
    groups: Mutex<HashMap<u64, Group<C>>>,
    /// Batch statements run, and the reads they answered (tests, metrics).
    stats: Mutex<LaneStats>,
}

/// Counts of a lane's batch statements (`Own` statements are not counted).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct LaneStats {
    pub batches: u64,
    pub reads: u64,
}

/// One template's state: leaders running (or made and not yet awake), reads waiting.
struct Group<C> {
    running: usize,
    queue: Vec<Waiter<C>>,
}

impl<C> Default for Group<C> {
    fn default() -> Self {
        Group { running: 0, queue: Vec::new() }
    }
}

/// A read waiting in a queue.
struct Waiter<C> {
    name: String,
    tx: oneshot::Sender<Wake<C>>,
}

/// What a waiting read is woken with.
enum Wake<C> {
    /// Its rows (or the batch statement's error).
    Rows(Result<Rows, StoreError>),
    /// It leads the next statement, for itself and these, on this connection if there is one.
    Lead(Vec<Waiter<C>>, Option<C>),
}

impl<C: LaneConn> PointLane<C> {
    pub(crate) fn new(limit: usize) -> PointLane<C> {
        PointLane { limit, groups: Mutex::default(), stats: Mutex::default() }
    }

    fn groups(&self) -> std::sync::MutexGuard<'_, HashMap<u64, Group<C>>> {
        // Poisoned only by a panic between two plain field updates: the state is still whole.
        self.groups.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    pub(crate) fn stats(&self) -> LaneStats {
        *self.stats.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// The rows of the read of `name` through `family`'s template on `conn`. `run` runs what
    /// this read leads, if it leads (at most once).
    pub(crate) async fn read(
        &self,
        family: &PointBatch,
        name: &str,
        conn: &mut C,
        run: impl AsyncFnOnce(&mut C, Run) -> Result<Rows, StoreError>,
    ) -> Result<Rows, StoreError> {
        if self.limit == 0 {
            return run(conn, Run::Own).await;
        }
        let rx = {
            let mut groups = self.groups();
            let group = groups.entry(family.id).or_default();
            if group.running < self.limit {
                group.running += 1;
                None
            } else {
                let (tx, rx) = oneshot::channel();
                group.queue.push(Waiter { name: name.to_string(), tx });
                Some(rx)
            }
        };
        let Some(rx) = rx else {
            let mut leading = Leading { lane: self, family, others: Vec::new(), done: false };
            let rows = run(&mut *conn, Run::Own).await;
            leading.finish(conn);
            return rows;
        };
        conn.release();
        let mut waiting = Waiting { lane: self, family, rx: Some(rx) };
        let woken = match waiting.rx.as_mut() {
            Some(rx) => rx.await,
            None => unreachable!("set above"),
        };
        waiting.rx = None;
        match woken {
            Ok(Wake::Rows(rows)) => rows,
            Ok(Wake::Lead(others, given)) => {
                if let Some(given) = given {
                    conn.take_over(given);
                }
                let mut leading = Leading { lane: self, family, others, done: false };
                let rows = leading.run_batch(name, &mut *conn, run).await;
                leading.finish(conn);
                rows
            }
            // The lane went away with its queue (the store is being dropped): read alone.
            Err(_) => run(conn, Run::Own).await,
        }
    }

    /// Hands the lead of `family`'s next statement on, with `conn` if any: to the first of
    /// `unserved` still waiting (reads a dropped leader did not answer), else to the first of
    /// the queue, with up to [`MAX_BATCH`] − 1 more; with nobody left, one statement fewer runs
    /// and `conn` comes back.
    fn pass_on(&self, family: &PointBatch, mut unserved: Vec<Waiter<C>>, mut conn: Option<C>) -> Option<C> {
        let mut groups = self.groups();
        loop {
            unserved.retain(|w| !w.tx.is_closed());
            let Some(group) = groups.get_mut(&family.id) else { return conn };
            if unserved.is_empty() {
                group.queue.retain(|w| !w.tx.is_closed());
                let n = group.queue.len().min(MAX_BATCH);
                unserved.extend(group.queue.drain(..n));
            }
            if unserved.is_empty() {
                group.running -= 1;
                if group.running == 0 {
                    groups.remove(&family.id);
                }
                return conn;
            }
            let first = unserved.remove(0);
            match first.tx.send(Wake::Lead(unserved, conn)) {
                Ok(()) => return None,
                // It left just now: the next one.
                Err(Wake::Lead(back, c)) => (unserved, conn) = (back, c),
                Err(Wake::Rows(_)) => unreachable!("sent a lead"),
            }
        }
    }
}

/// A read that leads a statement; whatever happens to it, the lead passes on.
struct Leading<'a, C: LaneConn> {
    lane: &'a PointLane<C>,
    family: &'a PointBatch,
    /// Reads this statement answers besides the leader's, until they are answered.
    others: Vec<Waiter<C>>,
    done: bool,
}

impl<C: LaneConn> Leading<'_, C> {
    /// Runs the statement for the leader (`name`) and `others`, and answers the others.
    async fn run_batch(
        &mut self,
        name: &str,
        conn: &mut C,
        run: impl AsyncFnOnce(&mut C, Run) -> Result<Rows, StoreError>,
    ) -> Result<Rows, StoreError> {
        self.others.retain(|w| !w.tx.is_closed());
        if self.others.is_empty() {
            return run(conn, Run::Own).await;
        }
        let names: Vec<&str> = std::iter::once(name).chain(self.others.iter().map(|w| w.name.as_str())).collect();
        let (sql, params) = self.family.statement(&names);
        drop(names);
        let result = run(conn, Run::Batch { sql, params }).await;
        let others = std::mem::take(&mut self.others);
        {
            let mut stats = self.lane.stats.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
            stats.batches += 1;
            stats.reads += 1 + others.len() as u64;
        }
        let rows = match result {
            Ok(rows) => rows,
            Err(e) => {
                for w in others {
                    let _ = w.tx.send(Wake::Rows(Err(e.clone())));
                }
                return Err(e);
            }
        };
        let asked = std::iter::once(name).chain(others.iter().map(|w| w.name.as_str()));
        let mut dealt = Deal::new(rows, self.family.name_column, asked);
        for w in others {
            let rows = dealt.take(&w.name);
            // A read that left meanwhile: its rows are dropped.
            let _ = w.tx.send(Wake::Rows(Ok(rows)));
        }
        Ok(dealt.take(name))
    }

    /// The statement has answered: the lead passes on to the queue, with the connection; with
    /// nobody to take it, the connection stays.
    fn finish(&mut self, conn: &mut C) {
        self.done = true;
        let given = conn.hand_over();
        if let Some(back) = self.lane.pass_on(self.family, std::mem::take(&mut self.others), given) {
            conn.take_over(back);
        }
    }
}

impl<C: LaneConn> Drop for Leading<'_, C> {
    fn drop(&mut self) {
        if !self.done {
            // Dropped before its statement answered (its connection goes with it): the reads it
            // was to answer go first.
            drop(self.lane.pass_on(self.family, std::mem::take(&mut self.others), None));
        }
    }
}

/// A read waiting in a queue; dropped after it was made leader but before it woke, it passes
/// the lead on (the message is in its channel; closing it first means no later one can come).
struct Waiting<'a, C: LaneConn> {
    lane: &'a PointLane<C>,
    family: &'a PointBatch,
    rx: Option<oneshot::Receiver<Wake<C>>>,
}

impl<C: LaneConn> Drop for Waiting<'_, C> {
    fn drop(&mut self) {
        if let Some(mut rx) = self.rx.take() {
            rx.close();
            if let Ok(Wake::Lead(others, conn)) = rx.try_recv() {
                drop(self.lane.pass_on(self.family, others, conn));
            }
        }
    }
}

/// A batch statement's rows dealt out by entry name (a name has one row at most; a name asked
/// by several reads gets a copy for each but the last).
struct Deal {
    rows: Vec<Option<Vec<Value>>>,
    /// Per row, the reads still to be given it.
    askers: Vec<usize>,
    name_column: usize,
}

impl Deal {
    fn new<'n>(rows: Rows, name_column: usize, asked: impl Iterator<Item = &'n str> + Clone) -> Deal {
        let askers = rows
            .iter()
            .map(|r| match Self::name_of(r, name_column) {
                Some(n) => asked.clone().filter(|a| *a == n).count(),
                None => 0,
            })
            .collect();
        Deal { rows: rows.into_iter().map(Some).collect(), askers, name_column }
    }

    fn name_of(row: &[Value], name_column: usize) -> Option<&str> {
        match row.get(name_column) {
            Some(Value::Text(s)) => Some(s),
            _ => None,
        }
    }

    /// The rows of `name`: moved out to the last read that asks for it, copied for the others.
    fn take(&mut self, name: &str) -> Rows {
        let column = self.name_column;
        let at = self.rows.iter().position(|r| r.as_deref().and_then(|r| Self::name_of(r, column)) == Some(name));
        let Some(at) = at else { return Vec::new() };
        self.askers[at] = self.askers[at].saturating_sub(1);
        let row = if self.askers[at] == 0 { self.rows[at].take() } else { self.rows[at].clone() };
        row.into_iter().collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sql::Dialect;
    use crate::sql::point::{Batchable, PointCache};
    use ardacat_core::query::ast::{Expr, OrderItem};
    use ardacat_core::query::{Column, Term};
    use ardacat_core::store::SelectPlan;
    use ardacat_core::types::ValueType;
    use std::sync::Mutex;
    use std::time::Duration;
    use tokio::sync::Semaphore;

    /// The statements of `getattr /c/<name> a1` as root: a root plan binds nothing but names.
    fn family() -> Arc<PointBatch> {
        let col = |column, vtype| Expr::Ref(Term::Column { table: 0, column, vtype });
        let plan = |name: &str| {
            let mut p = SelectPlan::of_collection(
                7,
                vec![col(Column::File, ValueType::Text), col(Column::Attr(1), ValueType::Int)],
                vec![ValueType::Text, ValueType::Int],
                None,
            );
            p.name_patterns = vec![(0, name.to_string())];
            p.order_by = vec![OrderItem { expr: col(Column::File, ValueType::Text), descending: false }];
            p
        };
        let mut cache = PointCache::default();
        cache.compile(Dialect::Postgres, &plan("e1"), None);
        let Some(Batchable { family, .. }) = cache.compile(Dialect::Postgres, &plan("e2"), None).batch else {
            panic!("a root point read of one table is batchable")
        };
        assert_eq!(family.name_column, 2);
        family
    }

    /// What the database would answer: a row per name but `missing…` ones (name, its length,
    /// the name again as the order key), once per distinct name.
    fn answer(names: &[String]) -> Rows {
        let mut rows: Rows = Vec::new();
        for n in names {
            if !n.starts_with("missing") && !rows.iter().any(|r| r[0] == Value::Text(n.clone())) {
                rows.push(vec![Value::Text(n.clone()), Value::Int(n.len() as i64), Value::Text(n.clone())]);
            }
        }
        rows
    }

    fn expected(name: &str) -> Rows {
        answer(&[name.to_string()])
    }

    fn names_of(params: &[Value]) -> Vec<String> {
        params.iter().map(|p| if let Value::Text(t) = p { t.clone() } else { panic!("{p:?}") }).collect()
    }

    /// Runs what a read leads: its own statement, or the batch (checking the statement reads
    /// exactly the names in its parameters); each waits for a permit of `gate` first.
    async fn fake_run(
        name: &str,
        conn: &mut FakeConn,
        run: Run,
        gate: &Semaphore,
        log: &Mutex<Vec<usize>>,
    ) -> Result<Rows, StoreError> {
        gate.acquire().await.expect("open").forget();
        // A statement on a connection that went back to the pool takes a new one (99).
        conn.held.get_or_insert(99);
        match run {
            Run::Own => {
                log.lock().unwrap().push(1);
                Ok(expected(name))
            }
            Run::Batch { sql, params } => {
                let names = names_of(&params);
                assert_eq!(names[0], name, "the leader's name first");
                assert_eq!(sql.matches("$").count(), names.len(), "{sql}");
                let distinct: std::collections::BTreeSet<&String> = names.iter().collect();
                log.lock().unwrap().push(distinct.len());
                Ok(answer(&names))
            }
        }
    }

    /// A read's connection: which pooled connection it holds, if any (numbers are made up per
    /// read; a handed-over one keeps its number).
    #[derive(Debug, Default)]
    struct FakeConn {
        held: Option<u32>,
        released: bool,
    }

    impl LaneConn for FakeConn {
        fn release(&mut self) {
            self.released |= self.held.take().is_some();
        }
        fn hand_over(&mut self) -> Option<Self> {
            Some(FakeConn { held: Some(self.held.take()?), released: false })
        }
        fn take_over(&mut self, other: Self) {
            self.held = other.held;
        }
    }

    impl PointLane<FakeConn> {
        fn queued(&self, id: u64) -> usize {
            self.groups().get(&id).map_or(0, |g| g.queue.len())
        }
        fn running(&self, id: u64) -> usize {
            self.groups().get(&id).map_or(0, |g| g.running)
        }
    }

    async fn until(what: impl Fn() -> bool) {
        for _ in 0..2000 {
            if what() {
                return;
            }
            tokio::time::sleep(Duration::from_millis(1)).await;
        }
        panic!("timed out waiting");
    }

    type Shared = (Arc<PointLane<FakeConn>>, Arc<PointBatch>, Arc<Semaphore>, Arc<Mutex<Vec<usize>>>);

    /// A read on a connection of its own (number `conn`); answers its rows and its connection.
    fn spawn_on(s: &Shared, name: &str, conn: u32) -> tokio::task::JoinHandle<(Result<Rows, StoreError>, FakeConn)> {
        let (lane, family, gate, log) = s.clone();
        let name = name.to_string();
        tokio::spawn(async move {
            let mut conn = FakeConn { held: Some(conn), released: false };
            let rows =
                lane.read(&family, &name, &mut conn, async |c, run| fake_run(&name, c, run, &gate, &log).await).await;
            (rows, conn)
        })
    }

    fn spawn_read(s: &Shared, name: &str) -> tokio::task::JoinHandle<Result<Rows, StoreError>> {
        let read = spawn_on(s, name, 1);
        tokio::spawn(async move { read.await.map(|(rows, _)| rows).unwrap() })
    }

    fn shared(limit: usize) -> Shared {
        (Arc::new(PointLane::new(limit)), family(), Arc::new(Semaphore::new(0)), Arc::default())
    }

    #[tokio::test]
    async fn reads_below_the_limit_run_their_own_statements() {
        let s = shared(2);
        s.2.add_permits(100);
        for name in ["a", "b", "missing"] {
            assert_eq!(spawn_read(&s, name).await.unwrap(), Ok(expected(name)));
        }
        assert_eq!(*s.3.lock().unwrap(), vec![1, 1, 1]);
        assert_eq!(s.0.stats(), LaneStats::default());
        assert!(s.0.groups().is_empty(), "an idle template leaves nothing behind");
    }

    #[tokio::test]
    async fn reads_that_queue_are_answered_together() {
        let s = shared(1);
        let first = spawn_read(&s, "first");
        until(|| s.0.running(s.1.id) == 1).await;
        // 40 reads queue behind it: names repeated, missing ones, the leader's own name.
        let names: Vec<String> = (0..40)
            .map(|i| match i % 10 {
                3 => "missing".to_string(),
                7 => "first".to_string(),
                9 => format!("e{}", i - 1),
                _ => format!("e{i}"),
            })
            .collect();
        let mut reads = Vec::new();
        for n in &names {
            reads.push((n.clone(), spawn_read(&s, n)));
        }
        until(|| s.0.queued(s.1.id) == 40).await;
        s.2.add_permits(100);
        assert_eq!(first.await.unwrap(), Ok(expected("first")));
        for (n, r) in reads {
            assert_eq!(r.await.unwrap(), Ok(expected(&n)), "{n}");
        }
        // The first read alone, then the queue in two statements: 32 names, then 8.
        let log = s.3.lock().unwrap().clone();
        assert_eq!(log.len(), 3, "{log:?}");
        assert_eq!(s.0.stats(), LaneStats { batches: 2, reads: 40 });
        assert!(s.0.groups().is_empty());
    }

    #[tokio::test]
    async fn a_failed_batch_fails_each_of_its_reads() {
        let s = shared(1);
        let (lane, family) = (s.0.clone(), s.1.clone());
        let gate = Arc::new(Semaphore::new(0));
        let failing = |name: &'static str| {
            let (lane, family, gate) = (lane.clone(), family.clone(), gate.clone());
            tokio::spawn(async move {
                lane.read(&family, name, &mut FakeConn::default(), async |_, run| {
                    gate.acquire().await.expect("open").forget();
                    match run {
                        Run::Own => Ok(expected(name)),
                        Run::Batch { .. } => Err(StoreError::Busy),
                    }
                })
                .await
            })
        };
        let first = failing("a");
        until(|| lane.running(family.id) == 1).await;
        let others = [failing("b"), failing("c"), failing("d")];
        until(|| lane.queued(family.id) == 3).await;
        gate.add_permits(10);
        assert_eq!(first.await.unwrap(), Ok(expected("a")));
        for r in others {
            assert_eq!(r.await.unwrap(), Err(StoreError::Busy));
        }
        assert!(lane.groups().is_empty());
    }

    #[tokio::test]
    async fn a_leader_dropped_mid_statement_passes_the_lead_on() {
        let s = shared(1);
        let first = spawn_on(&s, "first", 1);
        until(|| s.0.running(s.1.id) == 1).await;
        let reads: Vec<_> = ["a", "b", "c"].iter().map(|n| (*n, spawn_read(&s, n))).collect();
        until(|| s.0.queued(s.1.id) == 3).await;
        // A cancelled command: its statement never answers.
        first.abort();
        assert!(first.await.unwrap_err().is_cancelled());
        s.2.add_permits(100);
        for (n, r) in reads {
            assert_eq!(r.await.unwrap(), Ok(expected(n)));
        }
        assert_eq!(s.0.stats(), LaneStats { batches: 1, reads: 3 });
        assert!(s.0.groups().is_empty());
    }

    #[tokio::test]
    async fn a_batch_leader_dropped_mid_statement_passes_its_reads_on() {
        let s = shared(1);
        let first = spawn_read(&s, "first");
        until(|| s.0.running(s.1.id) == 1).await;
        let lead = spawn_on(&s, "lead", 2);
        until(|| s.0.queued(s.1.id) == 1).await;
        let reads: Vec<_> = ["a", "b"].iter().map(|n| (*n, spawn_read(&s, n))).collect();
        until(|| s.0.queued(s.1.id) == 3).await;
        s.2.add_permits(1);
        assert_eq!(first.await.unwrap(), Ok(expected("first")));
        // `lead` now leads a batch for all three and waits at the gate: cancel it there.
        until(|| s.0.queued(s.1.id) == 0).await;
        tokio::time::sleep(Duration::from_millis(20)).await;
        lead.abort();
        assert!(lead.await.unwrap_err().is_cancelled());
        s.2.add_permits(100);
        for (n, r) in reads {
            assert_eq!(r.await.unwrap(), Ok(expected(n)));
        }
        assert!(s.0.groups().is_empty());
    }

    #[tokio::test]
    async fn a_read_dropped_once_made_leader_passes_the_lead_on() {
        let s = shared(1);
        let (lane, family) = (&s.0, &s.1);
        // A leader running, and a queue of three; the first of them is told to lead the others
        // but is dropped before it wakes: the lead goes to the next.
        lane.groups().entry(family.id).or_default().running = 1;
        let mut rxs = Vec::new();
        let mut waiters = Vec::new();
        for n in ["x", "y", "z"] {
            let (tx, rx) = oneshot::channel();
            waiters.push(Waiter { name: n.to_string(), tx });
            rxs.push(rx);
        }
        let x = waiters.remove(0);
        assert!(x.tx.send(Wake::Lead(waiters, Some(FakeConn { held: Some(5), released: false }))).is_ok());
        let mut rxs = rxs.into_iter();
        drop(Waiting { lane: &**lane, family, rx: rxs.next() });
        match rxs.next().unwrap().try_recv() {
            Ok(Wake::Lead(rest, conn)) => {
                assert_eq!(rest.iter().map(|w| w.name.as_str()).collect::<Vec<_>>(), ["z"]);
                assert_eq!(conn.and_then(|c| c.held), Some(5), "with the connection");
            }
            _ => panic!("y leads"),
        }
        assert_eq!(lane.running(family.id), 1, "the lead moved, not ended");
    }

    #[tokio::test]
    async fn reads_that_left_the_queue_are_skipped() {
        let s = shared(1);
        let first = spawn_read(&s, "first");
        until(|| s.0.running(s.1.id) == 1).await;
        let gone = spawn_on(&s, "gone", 2);
        until(|| s.0.queued(s.1.id) == 1).await;
        let stays = spawn_read(&s, "stays");
        until(|| s.0.queued(s.1.id) == 2).await;
        gone.abort();
        assert!(gone.await.unwrap_err().is_cancelled());
        s.2.add_permits(100);
        assert_eq!(first.await.unwrap(), Ok(expected("first")));
        assert_eq!(stays.await.unwrap(), Ok(expected("stays")));
        // "stays" was alone once "gone" left: its own statement, no batch.
        assert_eq!(s.0.stats(), LaneStats::default());
        assert_eq!(*s.3.lock().unwrap(), vec![1, 1]);
    }

    #[tokio::test]
    async fn no_limit_no_lane() {
        let s = shared(0);
        s.2.add_permits(100);
        assert_eq!(spawn_read(&s, "a").await.unwrap(), Ok(expected("a")));
        assert!(s.0.groups().is_empty());
    }

    #[tokio::test]
    async fn waiting_reads_give_their_connections_back_and_leaders_pass_theirs_on() {
        let s = shared(1);
        let first = spawn_on(&s, "first", 1);
        until(|| s.0.running(s.1.id) == 1).await;
        let second = spawn_on(&s, "second", 2);
        until(|| s.0.queued(s.1.id) == 1).await;
        let third = spawn_on(&s, "third", 3);
        until(|| s.0.queued(s.1.id) == 2).await;
        s.2.add_permits(100);
        let (rows, conn) = first.await.unwrap();
        assert_eq!(rows, Ok(expected("first")));
        assert!(conn.held.is_none() && !conn.released, "its connection went on with the lead");
        // The second led the batch on the first's connection and, nobody waiting, kept it.
        let (rows, conn) = second.await.unwrap();
        assert_eq!(rows, Ok(expected("second")));
        assert_eq!((conn.held, conn.released), (Some(1), true));
        let (rows, conn) = third.await.unwrap();
        assert_eq!(rows, Ok(expected("third")));
        assert_eq!((conn.held, conn.released), (None, true), "answered without a connection");
        assert_eq!(s.0.stats(), LaneStats { batches: 1, reads: 2 });
    }
}
