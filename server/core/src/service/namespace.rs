//! Collections and their schemas: navigation, createdir/rmdir, `rm -rf` of a whole subtree,
//! listings, attributes, ownership (`chmod`/`chown` of collections, and of entries: one by name
//! or the caller's own by pattern).

use super::entries::{Matched, target};
use super::{Catalogue, RowSink, Session};
use crate::error::{Error, Result};
use crate::path;
use crate::perm::{Mode, Principal, READ, WRITE};
use crate::query::{Column, Term, ast::Expr};
use crate::store::{AttrDef, CollectionInfo, EntryAccess, EntryMetaChange, SelectPlan, Store, StoreConn};
use crate::types::{AttrType, ValueType};

/// What a listed name is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ItemKind {
    Collection,
    Entry,
}

impl ItemKind {
    pub fn as_str(self) -> &'static str {
        match self {
            ItemKind::Collection => "collection",
            ItemKind::Entry => "entry",
        }
    }
}

impl<S: Store> Catalogue<S> {
    pub fn pwd(&self, s: &Session<S>) -> String {
        s.cwd.clone()
    }

    pub async fn cd(&self, s: &mut Session<S>, dir: &str) -> Result<()> {
        let abs = path::absolute(&s.cwd, dir)?;
        let who = s.principal.clone();
        self.read(s, async |conn| {
            let c = Self::must_collection(conn, &abs).await?;
            Self::check(conn, &who, &c, READ).await
        })
        .await?;
        s.cwd = abs;
        Ok(())
    }

    /// `createdir <path> [plain]`: a new collection that inherits its parent's attributes
    /// unless `plain`.
    pub async fn createdir(&self, s: &mut Session<S>, dir: &str, plain: bool) -> Result<CollectionInfo> {
        let abs = path::absolute(&s.cwd, dir)?;
        let (parent_path, name) = path::split(&abs).ok_or_else(|| Error::DirExists("/".into()))?;
        if !path::valid_component(name) || path::has_wildcard(name) {
            return Err(Error::IllegalCommand(format!("invalid collection name '{name}'")));
        }
        let who = s.principal.clone();
        let mode = self.inner.config.collection_mode;
        self.write(s, async |conn| {
            if conn.collection(&abs).await?.is_some() {
                return Err(Error::DirExists(abs.clone()));
            }
            let parent = Self::must_collection(conn, parent_path).await?;
            Self::check(conn, &who, &parent, WRITE).await?;
            if entry_exists(conn, parent.id, name).await? {
                return Err(Error::Exists(abs.clone()));
            }
            let attrs: Vec<(String, AttrType, bool)> = if plain {
                Vec::new()
            } else {
                conn.attributes(parent.id).await?.iter().map(|a| (a.name.clone(), a.attr_type, a.indexed)).collect()
            };
            let group = who.groups.first().cloned().unwrap_or_else(|| who.user.clone());
            conn.create_collection(parent.id, &abs, &who.user, &group, mode, &attrs).await
        })
        .await
    }

    /// `rmdir <path>`: only an empty collection (no entries, no sub-collections) goes.
    pub async fn rmdir(&self, s: &mut Session<S>, dir: &str) -> Result<()> {
        let abs = path::absolute(&s.cwd, dir)?;
        if abs == "/" {
            return Err(Error::PermissionDenied("the root collection cannot be removed".into()));
        }
        let who = s.principal.clone();
        self.write(s, async |conn| {
            let c = Self::must_collection(conn, &abs).await?;
            let parent = match c.parent_id {
                Some(p) => conn.collection_by_id(p).await?.ok_or_else(|| Error::NotFound(abs.clone()))?,
                None => return Err(Error::PermissionDenied(abs.clone())),
            };
            Self::check(conn, &who, &parent, WRITE).await?;
            if !conn.children(c.id).await?.is_empty() || conn.has_entries(c.id).await? {
                return Err(Error::NotEmpty(abs.clone()));
            }
            conn.remove_collection(c.id).await
        })
        .await
    }

    /// `rm -rf <dir>`: the collection, its sub-collections at every depth and everything they
    /// hold (entries, entry tables, attributes, indexes, constraints, sequences, ACL rows), in
    /// one write unit; a constraint outside the subtree that refers into it stops it (3). Needs write on the parent and on every collection of the subtree, and write on
    /// every entry of a collection the caller does not own; one refusal (4) and nothing
    /// changes. `/` is refused (4); a path that is no collection is 1. Returns the number of
    /// collections removed.
    pub async fn rm_tree(&self, s: &mut Session<S>, dir: &str) -> Result<u64> {
        let abs = path::absolute(&s.cwd, dir)?;
        if abs == "/" {
            return Err(Error::PermissionDenied("the root collection cannot be removed".into()));
        }
        let who = s.principal.clone();
        self.write(s, async |conn| {
            let top = conn.collection(&abs).await?.ok_or_else(|| Error::NotFound(format!("collection {abs}")))?;
            let parent = match top.parent_id {
                Some(p) => conn.collection_by_id(p).await?.ok_or_else(|| Error::NotFound(abs.clone()))?,
                None => return Err(Error::PermissionDenied(abs.clone())),
            };
            Self::check(conn, &who, &parent, WRITE).await?;
            // Breadth first: every collection comes after its parent.
            let mut subtree = vec![top];
            let mut next = 0;
            while next < subtree.len() {
                let children = conn.children(subtree[next].id).await?;
                subtree.extend(children);
                next += 1;
            }
            for c in &subtree {
                Self::check(conn, &who, c, WRITE).await?;
                if Self::is_owner(&who, c) {
                    continue;
                }
                // Delete what the caller may write; anything left is an entry it may not.
                let plan = crate::store::DeletePlan {
                    tables: vec![c.id],
                    filter: None,
                    name_patterns: Vec::new(),
                    access: EntryAccess::new(&who, vec![WRITE]),
                };
                conn.delete_entries(&plan).await?;
                if conn.has_entries(c.id).await? {
                    return Err(Error::PermissionDenied(format!("{}: holds entries you may not remove", c.path)));
                }
            }
            // References between collections of the subtree go first: the store refuses to drop
            // a collection that a reference points at, whatever order siblings come in. One
            // from outside the subtree still stops the removal (code 3, naming it).
            for c in &subtree {
                for k in conn.constraints(c.id).await? {
                    if let crate::store::ConstraintRule::Reference { collection, .. } = k.rule
                        && subtree.iter().any(|t| t.id == collection)
                    {
                        conn.remove_constraint(&k).await?;
                    }
                }
            }
            // Deepest first: no collection outlives its parent, even for a moment.
            for c in subtree.iter().rev() {
                conn.remove_collection(c.id).await?;
            }
            Ok(subtree.len() as u64)
        })
        .await
    }

    /// `dir <path or pattern>`: rows `(full path, "collection"|"entry")`, collections first,
    /// each group in name order.
    pub async fn dir<K: RowSink>(&self, s: &mut Session<S>, target: &str, sink: &mut K) -> Result<u64> {
        self.listing(s, target, sink, true, true).await
    }

    /// `ls <path>`: one row per item (full path).
    pub async fn ls<K: RowSink>(&self, s: &mut Session<S>, target: &str, sink: &mut K) -> Result<u64> {
        self.listing(s, target, sink, true, false).await
    }

    /// `listentries <dir>`: entries only, one full path per row.
    pub async fn listentries<K: RowSink>(&self, s: &mut Session<S>, target: &str, sink: &mut K) -> Result<u64> {
        let abs = path::absolute(&s.cwd, target)?;
        let who = s.principal.clone();
        self.read(s, async |conn| {
            let c = Self::must_collection(conn, &abs).await?;
            Self::check(conn, &who, &c, READ).await?;
            stream_names(self, conn, &who, &c, None, sink, false).await
        })
        .await
    }

    async fn listing<K: RowSink>(
        &self,
        s: &mut Session<S>,
        target: &str,
        sink: &mut K,
        with_collections: bool,
        with_kind: bool,
    ) -> Result<u64> {
        let abs = path::absolute(&s.cwd, target)?;
        let who = s.principal.clone();
        self.read(s, async |conn| {
            let (coll, pattern) = match conn.collection(&abs).await? {
                Some(c) => (c, None),
                None => {
                    let (parent, last) = path::split(&abs).ok_or_else(|| Error::NotFound(abs.clone()))?;
                    let c = conn.collection(parent).await?.ok_or_else(|| Error::NotFound(abs.clone()))?;
                    if !path::has_wildcard(last) && !entry_exists(conn, c.id, last).await? {
                        return Err(Error::NotFound(abs.clone()));
                    }
                    (c, Some(last.to_string()))
                }
            };
            Self::check(conn, &who, &coll, READ).await?;
            // A hidden entry named exactly is a denial, not an empty listing.
            if let Some(name) = pattern.as_deref().filter(|p| !path::has_wildcard(p))
                && !entry_visible(conn, coll.id, name, EntryAccess::new(&who, vec![READ])).await?
            {
                return Err(Error::PermissionDenied(abs.clone()));
            }
            let mut n = 0;
            if with_collections {
                for child in conn.children(coll.id).await? {
                    let name = path::split(&child.path).map(|(_, n)| n).unwrap_or("");
                    if pattern.as_deref().is_some_and(|p| !glob_match(p, name)) {
                        continue;
                    }
                    let mut row = vec![Some(child.path.clone())];
                    if with_kind {
                        row.push(Some(ItemKind::Collection.as_str().into()));
                    }
                    sink.row(row).await?;
                    n += 1;
                }
            }
            n += stream_names(self, conn, &who, &coll, pattern.as_deref(), sink, with_kind).await?;
            Ok(n)
        })
        .await
    }

    /// `stat <path or pattern>`: per object 5 rows-values `(path, kind, owner, group, mode)`.
    pub async fn stat(&self, s: &mut Session<S>, target: &str) -> Result<Vec<Vec<Option<String>>>> {
        let abs = path::absolute(&s.cwd, target)?;
        let who = s.principal.clone();
        self.read(s, async |conn| {
            if let Some(c) = conn.collection(&abs).await? {
                Self::check(conn, &who, &c, READ).await?;
                return Ok(vec![vec![
                    Some(c.path.clone()),
                    Some("collection".into()),
                    Some(c.owner.clone()),
                    Some(c.group.clone()),
                    Some(Mode(c.perms).to_string()),
                ]]);
            }
            let (parent, last) = path::split(&abs).ok_or_else(|| Error::NotFound(abs.clone()))?;
            let c = conn.collection(parent).await?.ok_or_else(|| Error::NotFound(abs.clone()))?;
            Self::check(conn, &who, &c, READ).await?;
            let col = |column, vtype| Expr::Ref(Term::Column { table: 0, column, vtype });
            let plan = SelectPlan {
                tables: vec![c.id],
                columns: vec![
                    col(Column::File, ValueType::Text),
                    col(Column::Owner, ValueType::Text),
                    col(Column::Group, ValueType::Text),
                    col(Column::Perms, ValueType::Int),
                ],
                column_types: vec![ValueType::Text, ValueType::Text, ValueType::Text, ValueType::Int],
                filter: None,
                name_patterns: vec![(0, path::glob_to_like(last))],
                order_by: vec![],
                distinct: false,
                limit: None,
                after: None,
                access: EntryAccess::new(&who, vec![READ]),
                group_by: Vec::new(),
                having: None,
                offset: None,
            };
            let mut rows: Vec<Vec<Option<String>>> = Vec::new();
            self.run_select(conn, &plan, &mut rows).await?;
            if rows.is_empty() {
                return Err(if path::has_wildcard(last) {
                    Error::NotFound(abs)
                } else {
                    named_entry_error(conn, c.id, &abs, last).await
                });
            }
            Ok(rows
                .into_iter()
                .map(|r| {
                    let mut it = r.into_iter();
                    let name = it.next().flatten().unwrap_or_default();
                    let owner = it.next().flatten();
                    let group = it.next().flatten();
                    let perms = it.next().flatten();
                    vec![Some(path::join(&c.path, &name)), Some("entry".into()), owner, group, perms]
                })
                .collect())
        })
        .await
    }

    pub async fn addattr(
        &self,
        s: &mut Session<S>,
        dir: &str,
        name: &str,
        type_name: &str,
        indexed: bool,
    ) -> Result<()> {
        let abs = path::absolute(&s.cwd, dir)?;
        if !path::valid_attr_name(name) {
            return Err(Error::IllegalCommand(format!("invalid attribute name '{name}'")));
        }
        let attr_type = AttrType::parse(type_name)?;
        let who = s.principal.clone();
        self.write(s, async |conn| {
            let c = Self::must_collection(conn, &abs).await?;
            Self::check(conn, &who, &c, WRITE).await?;
            if conn.attributes(c.id).await?.iter().any(|a| a.name.eq_ignore_ascii_case(name)) {
                return Err(Error::Exists(format!("{abs}:{name}")));
            }
            conn.add_attribute(c.id, name, attr_type, indexed).await.map(|_| ())
        })
        .await
    }

    pub async fn removeattr(&self, s: &mut Session<S>, dir: &str, name: &str) -> Result<()> {
        let abs = path::absolute(&s.cwd, dir)?;
        let who = s.principal.clone();
        self.write(s, async |conn| {
            let c = Self::must_collection(conn, &abs).await?;
            Self::check(conn, &who, &c, WRITE).await?;
            let attr = find_attr(&conn.attributes(c.id).await?, &abs, name)?;
            conn.remove_attribute(c.id, &attr).await
        })
        .await
    }

    /// `listattr <dir or entry>`: the attributes of the collection (of the entry's collection).
    pub async fn listattr(&self, s: &mut Session<S>, target: &str) -> Result<Vec<AttrDef>> {
        let abs = path::absolute(&s.cwd, target)?;
        let who = s.principal.clone();
        self.read(s, async |conn| {
            let c = match conn.collection(&abs).await? {
                Some(c) => c,
                None => {
                    let (parent, name) = path::split(&abs).ok_or_else(|| Error::NotFound(abs.clone()))?;
                    let c = conn.collection(parent).await?.ok_or_else(|| Error::NotFound(abs.clone()))?;
                    if !entry_exists(conn, c.id, name).await? {
                        return Err(Error::NotFound(abs.clone()));
                    }
                    c
                }
            };
            Self::check(conn, &who, &c, READ).await?;
            Ok(conn.attributes(c.id).await?.to_vec())
        })
        .await
    }

    /// Collections below `path` (direct children), for SOAP `listSchemas`.
    pub async fn list_collections(&self, s: &mut Session<S>, dir: &str) -> Result<Vec<String>> {
        let abs = path::absolute(&s.cwd, dir)?;
        let who = s.principal.clone();
        self.read(s, async |conn| {
            let c = Self::must_collection(conn, &abs).await?;
            Self::check(conn, &who, &c, READ).await?;
            Ok(conn.children(c.id).await?.into_iter().map(|c| c.path).collect())
        })
        .await
    }

    /// `chmod <path> <rwxrwxrwx>`: owner or root. `path` is a collection, an entry, or a pattern
    /// of entries (then only the caller's own entries change; root's: all).
    pub async fn chmod(&self, s: &mut Session<S>, target: &str, mode: &str) -> Result<()> {
        let mode = Mode::parse(mode)?;
        let abs = path::absolute(&s.cwd, target)?;
        let who = s.principal.clone();
        let change = EntryMetaChange { perms: Some(mode.0), ..EntryMetaChange::default() };
        self.write(s, async |conn| {
            if let Some(c) = conn.collection(&abs).await? {
                if !Self::is_owner(&who, &c) {
                    return Err(Error::PermissionDenied(format!("only the owner may chmod {abs}")));
                }
                return conn.set_collection_perms(c.id, mode.0).await;
            }
            Self::change_entries(conn, &who, &abs, &change, "chmod").await
        })
        .await
    }

    /// `chown <path> <user>[:<group>]`: root may give a collection or entry away; an owner may
    /// change its group to one the owner belongs to. Entries as for [`Catalogue::chmod`].
    pub async fn chown(&self, s: &mut Session<S>, target: &str, spec: &str) -> Result<()> {
        let abs = path::absolute(&s.cwd, target)?;
        let (user, group) = match spec.split_once(':') {
            Some((u, g)) => (u, Some(g)),
            None => (spec, None),
        };
        let who = s.principal.clone();
        if let Some(g) = group
            && !who.is_root()
            && !who.groups.iter().any(|x| x == g)
        {
            return Err(Error::PermissionDenied(format!("not a member of group {g}")));
        }
        self.write(s, async |conn| {
            if let Some(c) = conn.collection(&abs).await? {
                if !Self::is_owner(&who, &c) {
                    return Err(Error::PermissionDenied(format!("only the owner may chown {abs}")));
                }
                if user != c.owner && !who.is_root() {
                    return Err(Error::PermissionDenied("only root may change the owner".into()));
                }
                if conn.user(user).await?.is_none() {
                    return Err(Error::NotFound(format!("user {user}")));
                }
                let group = group.map_or_else(|| c.group.clone(), str::to_string);
                return conn.set_collection_owner(c.id, user, &group).await;
            }
            // A non-root caller only ever changes entries it owns, so a new owner means giving away.
            if user != who.user && !who.is_root() {
                return Err(Error::PermissionDenied("only root may change the owner".into()));
            }
            if conn.user(user).await?.is_none() {
                return Err(Error::NotFound(format!("user {user}")));
            }
            let change =
                EntryMetaChange { owner: Some(user.to_string()), group: group.map(str::to_string), perms: None };
            Self::change_entries(conn, &who, &abs, &change, "chown").await
        })
        .await
    }

    /// chmod/chown of the entries `abs` names (one entry or a pattern): read on the collection,
    /// then only entries the caller owns (all of them for root). A named entry of someone else
    /// is error 4; a pattern that matches none of the caller's entries is error 1.
    async fn change_entries(
        conn: &mut S::Conn,
        who: &Principal,
        abs: &str,
        change: &EntryMetaChange,
        what: &str,
    ) -> Result<()> {
        let t = target(conn, "/", abs).await?;
        let like = t.pattern.as_deref().ok_or_else(|| Error::Internal(format!("{abs} is a collection")))?;
        Self::check(conn, who, &t.coll, READ).await?;
        let only_owner = (!who.is_root()).then_some(who.user.as_str());
        let n = conn.set_entry_meta(t.coll.id, like, only_owner, change).await?;
        // Entries the caller does not own count as not usable: the rule of `Target::matched`.
        match t.matched(conn, n, Matched::Changes(who, 0, false)).await {
            Err(Error::PermissionDenied(_)) => Err(Error::PermissionDenied(format!("only the owner may {what} {abs}"))),
            r => r.map(|_| ()),
        }
    }
}

pub(crate) fn find_attr(attrs: &[AttrDef], dir: &str, name: &str) -> Result<AttrDef> {
    attrs
        .iter()
        .find(|a| a.name.eq_ignore_ascii_case(name))
        .cloned()
        .ok_or_else(|| Error::NoSuchAttribute(format!("{dir}:{name}")))
}

/// Does an entry with exactly this name exist in the collection (whoever may see it)?
pub(crate) async fn entry_exists<C: StoreConn>(conn: &mut C, collection: i64, name: &str) -> Result<bool> {
    entry_visible(conn, collection, name, None).await
}

/// Does an entry with exactly this name exist and pass `access` (table 0)?
pub(crate) async fn entry_visible<C: StoreConn>(
    conn: &mut C,
    collection: i64,
    name: &str,
    access: Option<EntryAccess>,
) -> Result<bool> {
    // Names with wildcard characters cannot exist (createdir/addentry refuse them).
    if path::has_wildcard(name) {
        return Ok(false);
    }
    any_entry(conn, collection, &path::glob_to_like(name), access).await
}

/// Does any entry whose name matches `like` (a LIKE pattern, as in plans) pass `access`?
pub(crate) async fn any_entry<C: StoreConn>(
    conn: &mut C,
    collection: i64,
    like: &str,
    access: Option<EntryAccess>,
) -> Result<bool> {
    let plan = SelectPlan {
        tables: vec![collection],
        columns: vec![Expr::Ref(Term::Column { table: 0, column: Column::Id, vtype: ValueType::Int })],
        column_types: vec![ValueType::Int],
        filter: None,
        name_patterns: vec![(0, like.to_string())],
        order_by: vec![],
        distinct: false,
        limit: Some(1),
        after: None,
        access,
        group_by: Vec::new(),
        having: None,
        offset: None,
    };
    let (tx, mut rx) = tokio::sync::mpsc::channel(2);
    let n = conn.select(&plan, tx).await?;
    while let Some(r) = rx.recv().await {
        r?;
    }
    Ok(n > 0)
}

/// The error for an entry named exactly that a permission filter hid: 4 if it exists, else 1.
pub(crate) async fn named_entry_error<C: StoreConn>(conn: &mut C, collection: i64, abs: &str, name: &str) -> Error {
    match entry_exists(conn, collection, name).await {
        Ok(true) => Error::PermissionDenied(abs.to_string()),
        Ok(false) => Error::NotFound(abs.to_string()),
        Err(e) => e,
    }
}

async fn stream_names<S: Store, K: RowSink>(
    cat: &Catalogue<S>,
    conn: &mut S::Conn,
    who: &Principal,
    c: &CollectionInfo,
    pattern: Option<&str>,
    sink: &mut K,
    with_kind: bool,
) -> Result<u64> {
    let plan = SelectPlan {
        tables: vec![c.id],
        columns: vec![Expr::Ref(Term::Column { table: 0, column: Column::File, vtype: ValueType::Text })],
        column_types: vec![ValueType::Text],
        filter: None,
        name_patterns: pattern.map(|p| vec![(0, path::glob_to_like(p))]).unwrap_or_default(),
        order_by: vec![ordered_by_name()],
        distinct: false,
        limit: None,
        after: None,
        access: EntryAccess::new(who, vec![READ]),
        group_by: Vec::new(),
        having: None,
        offset: None,
    };
    let mut adapter = MapSink {
        inner: sink,
        f: |row: Vec<Option<String>>| {
            let name = row.into_iter().next().flatten().unwrap_or_default();
            // `dir` lists entries by bare name and collections by path (as Ganga's client expects).
            let mut out = vec![Some(if with_kind { name } else { path::join(&c.path, &name) })];
            if with_kind {
                out.push(Some(ItemKind::Entry.as_str().into()));
            }
            out
        },
    };
    cat.run_select(conn, &plan, &mut adapter).await
}

fn ordered_by_name() -> crate::query::ast::OrderItem<Term> {
    crate::query::ast::OrderItem {
        expr: Expr::Ref(Term::Column { table: 0, column: Column::File, vtype: ValueType::Text }),
        descending: false,
    }
}

/// A sink that rewrites each row before passing it on.
pub(crate) struct MapSink<'a, K, F> {
    pub inner: &'a mut K,
    pub f: F,
}

impl<K, F> RowSink for MapSink<'_, K, F>
where
    K: RowSink,
    F: FnMut(Vec<Option<String>>) -> Vec<Option<String>> + Send,
{
    async fn row(&mut self, row: Vec<Option<String>>) -> Result<()> {
        let row = (self.f)(row);
        self.inner.row(row).await
    }
}

/// Shell-glob match of one name (used for sub-collection names, which are not in entry tables).
pub(crate) fn glob_match(pattern: &str, name: &str) -> bool {
    // Dynamic programming keeps hostile patterns like `*a*a*a*…` linear in |p|·|n|.
    let p: Vec<char> = pattern.chars().collect();
    let n: Vec<char> = name.chars().collect();
    let mut row = vec![false; n.len() + 1];
    row[0] = true;
    for pc in &p {
        let mut next = vec![false; n.len() + 1];
        if *pc == '*' {
            next[0] = row[0];
        }
        for j in 1..=n.len() {
            next[j] = match pc {
                '*' => next[j - 1] || row[j],
                '?' => row[j - 1],
                c => row[j - 1] && *c == n[j - 1],
            };
        }
        row = next;
    }
    row[n.len()]
}

#[cfg(test)]
mod tests {
    use super::glob_match;

    #[test]
    fn globs() {
        assert!(glob_match("t?", "t1"));
        assert!(!glob_match("t?", "t10"));
        assert!(glob_match("*", ""));
        assert!(glob_match("a*b*c", "aXXbYc"));
        assert!(!glob_match("a*b*c", "aXXbY"));
        assert!(!glob_match(&"*a".repeat(40), &"a".repeat(39)));
    }
}
