//! Restore of a dump (docs/dump-format.md): the records arrive one at a time, are applied in
//! ONE transaction of their own through the catalogue's operations (collections, attributes,
//! indexes, constraints: `createdir`, `addattr`, `index_create`, `constraint_add`, so their
//! checks hold) and the bulk insert (entries, in chunks, with their owner, group and mode), and
//! the whole restore commits only when the trailer's counts and checksum match what arrived.
//! Anything else — a damaged, truncated or foreign file, a record that does not apply, a
//! collection that exists already — rolls all of it back. Only root restores: a dump sets
//! owners, groups, modes, ACLs and (for `/`) users. A frontend only holds the [`Restore`]
//! between lines.

use super::format::{self, Tally, damaged};
use super::{DumpSummary, Session};
use crate::error::{Error, Result};
use crate::path;
use crate::perm::{AclEntry, Mode};
use crate::service::Catalogue;
use crate::service::NewConstraint;
use crate::service::entries::{check_entry_name, insert_checked};
use crate::store::{Attributes, CollectionInfo, NewEntry, Store, StoreConn};
use crate::types::Value;

/// Entries buffered before they go to the bulk insert.
const CHUNK: usize = 2000;

/// A restore in progress, from [`Catalogue::restore_start`] to [`Catalogue::restore_finish`].
pub struct Restore {
    /// `--into`: where the dump's root goes (default: where it came from).
    into: Option<String>,
    /// The dump's root (header) and where it goes, once the header arrived.
    roots: Option<(String, String)>,
    tally: Tally,
    /// The first problem; every later line is ignored and the restore rolls back.
    error: Option<Error>,
    /// The trailer arrived and matched.
    done: bool,
    /// Lines taken (for messages).
    lines: u64,
    /// The collection whose entries are arriving, its attributes, and entries not yet inserted.
    current: Option<(CollectionInfo, Attributes)>,
    pending: Vec<NewEntry>,
    /// Collections that received entries (their planner statistics are gathered after commit).
    loaded: Vec<i64>,
    /// The restore opened the session's transaction (it did unless it was refused at start).
    owns_tx: bool,
}

impl Restore {
    /// Whether the restore failed already (nothing of it will be kept).
    pub fn failed(&self) -> bool {
        self.error.is_some()
    }

    /// Spoil the restore with `e` (unless it failed already).
    pub fn fail(&mut self, e: Error) {
        self.error.get_or_insert(e);
    }

    /// A path of the dump → the path it is restored to; `None` when it is outside the root.
    fn map(&self, p: &str) -> Option<String> {
        let (from, to) = self.roots.as_ref()?;
        let rest = if p == from {
            ""
        } else if from == "/" {
            p.strip_prefix('/')?
        } else {
            p.strip_prefix(from.as_str())?.strip_prefix('/')?
        };
        Some(if rest.is_empty() { to.clone() } else { path::join(to, rest) })
    }

    fn inside(&self, p: &str) -> Result<String> {
        self.map(p).ok_or_else(|| damaged(format!("{p} is outside the dump's root")))
    }

    fn is_root(&self, t: &str) -> bool {
        self.roots.as_ref().is_some_and(|(_, to)| to == t)
    }
}

/// The error of line `n`, keeping its code.
fn at_line(e: Error, n: u64) -> Error {
    let tag = |m: String| format!("dump line {n}: {m}");
    match e {
        Error::NotFound(m) => Error::NotFound(tag(m)),
        Error::IllegalCommand(m) => Error::IllegalCommand(tag(m)),
        Error::Exists(m) => Error::Exists(tag(m)),
        Error::DirExists(m) => Error::DirExists(tag(m)),
        Error::InvalidValue(m) => Error::InvalidValue(tag(m)),
        Error::NoSuchAttribute(m) => Error::NoSuchAttribute(tag(m)),
        Error::NotEmpty(m) => Error::NotEmpty(tag(m)),
        e => e,
    }
}

fn need(f: &[Option<String>], i: usize) -> Result<&str> {
    match f.get(i) {
        Some(Some(v)) => Ok(v),
        Some(None) => Err(damaged(format!("field {} of a {} record may not be NULL", i + 1, kind(f)))),
        None => Err(damaged(format!("a {} record has too few fields", kind(f)))),
    }
}

fn kind(f: &[Option<String>]) -> &str {
    f.first().and_then(|k| k.as_deref()).unwrap_or("")
}

fn width(f: &[Option<String>], n: usize) -> Result<()> {
    if f.len() != n {
        return Err(damaged(format!("a {} record has {} fields, not {n}", kind(f), f.len())));
    }
    Ok(())
}

fn mode_of(s: &str) -> Result<u16> {
    u16::from_str_radix(s, 8).ok().filter(|m| *m <= 0o7777).ok_or_else(|| damaged(format!("bad mode '{s}'")))
}

fn int_of(s: &str) -> Result<i64> {
    s.parse().map_err(|_| damaged(format!("bad number '{s}'")))
}

fn acl_of(kind: &str, principal: &str, rights: &str) -> Result<AclEntry> {
    let is_group = match kind {
        "u" => false,
        "g" => true,
        k => return Err(damaged(format!("bad ACL kind '{k}'"))),
    };
    Ok(AclEntry { principal: principal.to_string(), is_group, rights: Mode::parse_rights(rights)? })
}

impl<S: Store> Catalogue<S> {
    /// Starts a restore into `into` (default: the dump's own root), in a transaction of its own.
    /// A failure to start is kept in the restore (reported by `restore_finish`).
    pub async fn restore_start(&self, s: &mut Session<S>, into: Option<String>) -> Restore {
        let mut r = Restore {
            into: None,
            roots: None,
            tally: Tally::default(),
            error: None,
            done: false,
            lines: 0,
            current: None,
            loaded: Vec::new(),
            pending: Vec::new(),
            owns_tx: false,
        };
        let start = async {
            if !s.principal.is_root() {
                return Err(Error::PermissionDenied("only root may restore a dump".into()));
            }
            if s.in_transaction() {
                return Err(Error::Transaction(
                    "restore runs in a transaction of its own; commit or abort first".into(),
                ));
            }
            let into = into.map(|p| path::absolute(&s.cwd, &p)).transpose()?;
            self.begin(s).await?;
            Ok(into)
        };
        match start.await {
            Ok(into) => {
                r.into = into;
                r.owns_tx = true;
            }
            Err(e) => r.error = Some(e),
        }
        r
    }

    /// One line of the dump (without its newline). Problems are kept in the restore, not
    /// returned: the protocol answers the lines with nothing and reports at the end.
    pub async fn restore_put(&self, s: &mut Session<S>, r: &mut Restore, line: &str) {
        if r.error.is_some() {
            return;
        }
        r.lines += 1;
        let n = r.lines;
        let result = self.restore_line(s, r, line).await;
        if let Err(e) = result {
            r.error = Some(at_line(e, n));
        }
    }

    async fn restore_line(&self, s: &mut Session<S>, r: &mut Restore, line: &str) -> Result<()> {
        if r.done {
            return Err(damaged("records after the trailer"));
        }
        if r.roots.is_none() {
            let from = format::parse_header(line)?;
            let to = r.into.clone().unwrap_or_else(|| from.clone());
            r.tally.add(line);
            r.roots = Some((from, to));
            return Ok(());
        }
        if format::is_trailer(line) {
            self.restore_flush(s, r).await?;
            r.tally.check_trailer(line)?;
            r.done = true;
            return Ok(());
        }
        r.tally.add(line);
        let f = format::fields(line)?;
        if kind(&f) != "E" {
            self.restore_flush(s, r).await?;
        }
        match kind(&f) {
            "U" => {
                width(&f, 3)?;
                let (name, hash) = (need(&f, 1)?.to_string(), f[2].clone());
                self.write(s, async |c| match (c.user(&name).await?, hash) {
                    (Some(_), Some(h)) => c.set_password(&name, &h).await.map(|_| ()),
                    (Some(_), None) => Ok(()),
                    (None, h) => c.create_user(&name, h.as_deref()).await,
                })
                .await?;
                self.auth_changed(s);
            }
            "US" => {
                width(&f, 3)?;
                let (name, subject) = (need(&f, 1)?, need(&f, 2)?);
                self.write(s, async |c| {
                    if c.subjects(name).await?.iter().any(|x| x == subject) {
                        return Ok(());
                    }
                    c.add_subject(name, subject).await
                })
                .await?;
            }
            "G" => {
                width(&f, 3)?;
                let (name, owner) = (need(&f, 1)?, need(&f, 2)?);
                self.write(
                    s,
                    async |c| if c.group_exists(name).await? { Ok(()) } else { c.create_group(name, owner).await },
                )
                .await?;
                self.auth_changed(s);
            }
            "GM" => {
                width(&f, 3)?;
                let (group, user) = (need(&f, 1)?, need(&f, 2)?);
                self.write(s, async |c| {
                    if c.group_members(group).await?.iter().any(|m| m == user) {
                        return Ok(());
                    }
                    c.add_member(group, user).await
                })
                .await?;
                self.auth_changed(s);
            }
            "SUDO" => {
                width(&f, 2)?;
                let name = need(&f, 1)?;
                if !self.write(s, async |c| c.set_may_sudo(name, true).await).await? {
                    return Err(Error::NotFound(format!("user {name}")));
                }
                self.auth_changed(s);
            }
            "SITE" => {
                width(&f, 3)?;
                let (name, server) = (need(&f, 1)?, need(&f, 2)?);
                self.write(s, async |c| {
                    if c.site_by_name(name).await?.is_none() {
                        c.add_site(name, server).await?;
                    }
                    Ok(())
                })
                .await?;
            }
            "RF" => {
                width(&f, 3)?;
                let (guid, owner) = (need(&f, 1)?, need(&f, 2)?);
                self.write(s, async |c| {
                    if c.replica_owner(guid, false).await?.is_none() {
                        c.add_replica_file(guid, owner).await?;
                    }
                    Ok(())
                })
                .await?;
            }
            "R" => {
                width(&f, 3)?;
                let (guid, site) = (need(&f, 1)?, need(&f, 2)?);
                self.write(s, async |c| {
                    let id = c.site_by_name(site).await?.ok_or_else(|| Error::NotFound(format!("site {site}")))?.id;
                    if c.replica_owner(guid, false).await?.is_none() {
                        return Err(Error::NotFound(format!("replica file {guid}")));
                    }
                    if !c.replica_sites(guid).await?.contains(&id) {
                        c.add_replica(guid, id).await?;
                    }
                    Ok(())
                })
                .await?;
            }
            "C" => self.restore_collection(s, r, &f).await?,
            "A" => {
                width(&f, 5)?;
                let t = r.inside(need(&f, 1)?)?;
                let indexed = match need(&f, 4)? {
                    "0" => false,
                    "1" => true,
                    x => return Err(damaged(format!("bad indexed flag '{x}'"))),
                };
                self.addattr(s, &t, need(&f, 2)?, need(&f, 3)?, indexed).await?;
                r.current = None;
            }
            "X" => {
                let t = r.inside(need(&f, 1)?)?;
                let cols = (3..f.len()).map(|i| need(&f, i).map(str::to_string)).collect::<Result<Vec<_>>>()?;
                self.index_create(s, &t, need(&f, 2)?, &cols).await?;
            }
            "L" => {
                width(&f, 5)?;
                let t = r.inside(need(&f, 1)?)?;
                let acl = acl_of(need(&f, 2)?, need(&f, 3)?, need(&f, 4)?)?;
                self.write(s, async |c| {
                    let coll = Self::must_collection(c, &t).await?;
                    c.set_acl(coll.id, &acl).await
                })
                .await?;
                self.auth_changed(s);
            }
            "S" => {
                width(&f, 5)?;
                let t = r.inside(need(&f, 1)?)?;
                let name = need(&f, 2)?;
                if !path::valid_component(name) || path::has_wildcard(name) {
                    return Err(damaged(format!("invalid sequence name '{name}'")));
                }
                let (inc, next) = (int_of(need(&f, 3)?)?, int_of(need(&f, 4)?)?);
                if inc == 0 {
                    return Err(damaged("a sequence increment may not be 0"));
                }
                self.write(s, async |c| {
                    let coll = Self::must_collection(c, &t).await?;
                    c.create_sequence(coll.id, name, inc, next).await
                })
                .await?;
            }
            "E" => self.restore_entry(s, r, f).await?,
            "EL" => {
                width(&f, 6)?;
                let t = r.inside(need(&f, 1)?)?;
                let entry = need(&f, 2)?;
                let acl = acl_of(need(&f, 3)?, need(&f, 4)?, need(&f, 5)?)?;
                self.write(s, async |c| {
                    let coll = Self::must_collection(c, &t).await?;
                    let meta = c.entry_meta(coll.id, &path::glob_to_like(entry), false).await?;
                    let e =
                        meta.iter().find(|m| m.name == entry).ok_or_else(|| Error::NotFound(path::join(&t, entry)))?;
                    c.set_entry_acl(coll.id, e.id, &acl).await
                })
                .await?;
            }
            "K" => {
                let t = r.inside(need(&f, 1)?)?;
                let name = need(&f, 2)?;
                let new = match need(&f, 3)? {
                    "not_null" => NewConstraint::NotNull { attr: need(&f, 4)?.to_string() },
                    "unique" => NewConstraint::Unique { attr: need(&f, 4)?.to_string() },
                    "check" => NewConstraint::Check { condition: need(&f, 4)?.to_string() },
                    "reference" => {
                        width(&f, 7)?;
                        let rp = need(&f, 5)?;
                        let rp = r.map(rp).unwrap_or_else(|| rp.to_string());
                        NewConstraint::Reference {
                            attr: need(&f, 4)?.to_string(),
                            referred: format!("{rp}:{}", need(&f, 6)?),
                        }
                    }
                    k => return Err(damaged(format!("unknown constraint kind '{k}'"))),
                };
                self.constraint_add(s, &t, name, &new).await?;
            }
            k => return Err(damaged(format!("unknown record type '{k}'"))),
        }
        Ok(())
    }

    /// A `C` record: the root of the restore may exist if it is empty (no attributes, entries or
    /// sub-collections); every other collection is created.
    async fn restore_collection(&self, s: &mut Session<S>, r: &mut Restore, f: &[Option<String>]) -> Result<()> {
        width(f, 5)?;
        let t = r.inside(need(f, 1)?)?;
        let (owner, group, mode) = (need(f, 2)?, need(f, 3)?, mode_of(need(f, 4)?)?);
        let is_root = r.is_root(&t);
        let existing = self.read(s, async |c| c.collection(&t).await).await?;
        match existing {
            Some(c) if is_root => {
                let empty = self
                    .read(s, async |k| {
                        Ok(k.attributes(c.id).await?.is_empty()
                            && k.children(c.id).await?.is_empty()
                            && !k.has_entries(c.id).await?)
                    })
                    .await?;
                if !empty {
                    return Err(Error::NotEmpty(format!("{t} (a restore needs an empty target)")));
                }
            }
            Some(_) => return Err(Error::DirExists(t.clone())),
            None => {
                self.createdir(s, &t, true).await?;
            }
        }
        self.write(s, async |c| {
            let coll = Self::must_collection(c, &t).await?;
            c.set_collection_owner(coll.id, owner, group).await?;
            c.set_collection_perms(coll.id, mode).await
        })
        .await?;
        r.current = None;
        Ok(())
    }

    /// An `E` record: checked and typed like the bulk insert's rows, buffered, inserted in chunks.
    async fn restore_entry(&self, s: &mut Session<S>, r: &mut Restore, f: Vec<Option<String>>) -> Result<()> {
        let t = r.inside(need(&f, 1)?)?;
        if r.current.as_ref().is_none_or(|(c, _)| c.path != t) {
            self.restore_flush(s, r).await?;
            let cur = self
                .read(s, async |c| {
                    let coll = Self::must_collection(c, &t).await?;
                    let attrs = c.attributes(coll.id).await?;
                    Ok((coll, attrs))
                })
                .await?;
            if !r.loaded.contains(&cur.0.id) {
                r.loaded.push(cur.0.id);
            }
            r.current = Some(cur);
        }
        let Some((_, attrs)) = r.current.as_ref() else { return Err(Error::Internal("no collection".into())) };
        if f.len() != 6 + attrs.len() {
            return Err(damaged(format!(
                "an entry of {t} has {} values for {} attributes",
                f.len() as i64 - 6,
                attrs.len()
            )));
        }
        let name = need(&f, 2)?.to_string();
        check_entry_name(&name)?;
        let (owner, group, perms) = (need(&f, 3)?.to_string(), need(&f, 4)?.to_string(), mode_of(need(&f, 5)?)?);
        let values = attrs
            .iter()
            .zip(&f[6..])
            .map(|(a, v)| v.as_deref().map_or(Ok(Value::Null), |v| a.attr_type.parse_value(v)))
            .collect::<Result<Vec<Value>>>()?;
        r.pending.push(NewEntry { name, owner, group, perms, values });
        if r.pending.len() >= CHUNK {
            self.restore_flush(s, r).await?;
        }
        Ok(())
    }

    /// Inserts the buffered entries of the current collection.
    async fn restore_flush(&self, s: &mut Session<S>, r: &mut Restore) -> Result<()> {
        if r.pending.is_empty() {
            return Ok(());
        }
        let Some((coll, attrs)) = r.current.as_ref() else { return Err(Error::Internal("no collection".into())) };
        let entries = std::mem::take(&mut r.pending);
        self.write(s, async |c| insert_checked(c, coll, attrs, entries).await).await?;
        Ok(())
    }

    /// Ends a restore: commits when every line applied and the trailer matched, else rolls all
    /// of it back and reports the first problem (a missing trailer: a truncated file).
    pub async fn restore_finish(&self, s: &mut Session<S>, r: Restore) -> Result<DumpSummary> {
        let summary = DumpSummary { records: r.tally.records, entries: r.tally.entries };
        let owns_tx = r.owns_tx;
        let problem = match (r.error, r.done, r.roots.is_some()) {
            (Some(e), _, _) => Some(e),
            (None, true, _) => None,
            (None, false, false) => Some(damaged("empty: no header")),
            (None, false, true) => Some(damaged("truncated: no trailer")),
        };
        match problem {
            None => {
                self.commit(s).await?;
                if owns_tx {
                    self.settle_statistics(&r.loaded).await;
                }
                Ok(summary)
            }
            Some(e) => {
                if owns_tx && s.in_transaction() {
                    self.abort(s).await?;
                }
                Err(e)
            }
        }
    }

    /// Drops a restore: nothing of it is kept.
    pub async fn restore_abort(&self, s: &mut Session<S>, r: Restore) -> Result<()> {
        // A restore refused at start holds no transaction.
        if r.owns_tx && s.in_transaction() {
            self.abort(s).await?;
        }
        Ok(())
    }
}
