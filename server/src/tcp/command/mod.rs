//! THE command table of the TCP protocol. Each command is described once, in the module of its
//! family, as a [`CommandSpec`]: name and aliases, the usage line `help` shows, whether it
//! writes (audit log) and may run inside an `upload`, and its argument parser; the handler is
//! the family's `run` arm next to it. The metrics label is the name. Adding a command is one
//! entry in a family's `COMMANDS`, one variant of its `Cmd`, one arm of its `run` (see
//! docs/development.md). It translates only: every rule is the catalogue's.
//!
//! Arguments arrive already unquoted (`ardacat_proto::tokenize`); a bad argument list is a
//! code-3 error naming the usage. Names are case-insensitive.

mod acl;
mod admin;
mod dump;
mod entries;
mod namespace;
mod query;
pub mod repeat;
mod replicas;
mod sequences;
mod session;
mod transactions;

pub use dump::in_restore;

use foldhash::HashMap;
use std::borrow::Cow;
use std::cell::Cell;
use std::mem::take;
use std::sync::LazyLock;

use ardacat_core::Error;
use ardacat_proto::{tokenize_args, tokenize_escaped};
use tokio::io::AsyncWrite;

use super::ConnState;
use super::reply::Reply;
use crate::state::Shared;

/// One argument of a command line: the line's own text unless unquoting or unescaping changed it
/// (`ardacat_proto::tokenize_args`).
pub type Arg<'l> = Cow<'l, str>;

/// An argument the command keeps, as its own string (the line's slot is left empty).
pub fn own(arg: &mut Arg<'_>) -> String {
    take(arg).into_owned()
}

/// Whether a command changes data (written to the audit log).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Read,
    Write,
}

/// One command of the protocol.
pub struct CommandSpec {
    /// The canonical name: what `help` lists and the metrics label.
    pub name: &'static str,
    /// Other names accepted for it (not listed by `help`, counted as `other` in metrics).
    pub aliases: &'static [&'static str],
    /// The synopsis `help` shows and a wrong argument count quotes.
    pub usage: &'static str,
    pub kind: Kind,
    /// Allowed while an `upload` is open (only `put`, `commit` and `abort`).
    pub in_upload: bool,
    /// The arguments after the name → the command, or a code-3 error. Parsers take ([`own`])
    /// the arguments they keep: most borrow the line, and the line is done with them.
    pub parse: fn(&Call<'_>, &mut [Arg<'_>]) -> Result<Cmd, Error>,
}

impl CommandSpec {
    /// The label of this command in metrics.
    pub fn label(&self) -> &'static str {
        self.name
    }
}

/// A parsed command of some family.
#[derive(Debug, Clone, PartialEq)]
pub enum Cmd {
    Session(session::Cmd),
    Namespace(namespace::Cmd),
    Entries(entries::Cmd),
    Query(query::Cmd),
    Transactions(transactions::Cmd),
    Sequences(sequences::Cmd),
    Acl(acl::Cmd),
    Admin(admin::Cmd),
    Replicas(replicas::Cmd),
    Dump(dump::Cmd),
}

/// The families in `help` order.
static FAMILIES: [&[CommandSpec]; 10] = [
    session::COMMANDS,
    namespace::COMMANDS,
    entries::COMMANDS,
    query::COMMANDS,
    transactions::COMMANDS,
    sequences::COMMANDS,
    acl::COMMANDS,
    admin::COMMANDS,
    replicas::COMMANDS,
    dump::COMMANDS,
];

/// Every command, in `help` order.
pub fn all() -> impl Iterator<Item = &'static CommandSpec> {
    FAMILIES.iter().flat_map(|f| f.iter())
}

/// Lowercase name or alias → command.
static REGISTRY: LazyLock<HashMap<&'static str, &'static CommandSpec>> = LazyLock::new(|| {
    let mut map = HashMap::default();
    for spec in all() {
        for name in std::iter::once(&spec.name).chain(spec.aliases) {
            let old = map.insert(*name, spec);
            assert!(old.is_none(), "command {name} is defined twice");
        }
    }
    map
});

fn lower(name: &str) -> Cow<'_, str> {
    if name.bytes().any(|b| b.is_ascii_uppercase()) {
        Cow::Owned(name.to_ascii_lowercase())
    } else {
        Cow::Borrowed(name)
    }
}

/// The command a name (any case, aliases included) stands for.
pub fn lookup(name: &str) -> Option<&'static CommandSpec> {
    REGISTRY.get(lower(name).as_ref()).copied()
}

/// The metrics label of a command line's first word: its command's name, or `other` for an
/// alias or an unknown word.
pub fn label(word: &str) -> &'static str {
    lookup(word).filter(|s| s.name.eq_ignore_ascii_case(word)).map_or("other", CommandSpec::label)
}

/// A command as the client typed it (name lowercased), for the parsers' error messages.
pub struct Call<'a> {
    pub name: &'a str,
    pub spec: &'static CommandSpec,
    /// Which of the parser's arguments were sent as `\N` (NULL, the `escape` extension); empty
    /// without `escape`. Only values may be NULL: the parser takes them through
    /// [`Call::value_pairs`] or [`Call::values`], and a NULL it did not take is an error.
    nulls: &'a [bool],
    nulls_taken: Cell<usize>,
}

impl Call<'_> {
    /// `usage: <name as typed> <u>`.
    pub fn usage(&self, u: &str) -> Error {
        Error::IllegalCommand(format!("usage: {} {u}", self.name))
    }

    /// The argument count fits no form of the command: its usage line; for an alias, that the
    /// alias is unknown in this form (as the original table answered).
    pub fn wrong(&self) -> Error {
        if self.name == self.spec.name {
            Error::IllegalCommand(format!("usage: {}", self.spec.usage))
        } else {
            unknown(self.name)
        }
    }

    /// Exactly no arguments.
    pub fn none(&self, args: &[Arg<'_>], cmd: Cmd) -> Result<Cmd, Error> {
        if args.is_empty() { Ok(cmd) } else { Err(self.wrong()) }
    }

    /// Exactly one argument.
    pub fn one(&self, args: &mut [Arg<'_>], u: &str) -> Result<String, Error> {
        match args {
            [a] => Ok(own(a)),
            _ => Err(self.usage(u)),
        }
    }

    /// Exactly two arguments.
    pub fn two(&self, args: &mut [Arg<'_>], u: &str) -> Result<(String, String), Error> {
        match args {
            [a, b] => Ok((own(a), own(b))),
            _ => Err(self.usage(u)),
        }
    }

    /// `<name> <value>` pairs in `args[from..]` (`args`: all the parser's arguments); a value sent
    /// as `\N` is `None`.
    pub fn value_pairs(
        &self,
        args: &mut [Arg<'_>],
        from: usize,
        u: &str,
    ) -> Result<Vec<(String, Option<String>)>, Error> {
        let rest = args.get_mut(from..).unwrap_or_default();
        if !rest.len().is_multiple_of(2) {
            return Err(self.usage(u));
        }
        Ok(rest
            .chunks_mut(2)
            .enumerate()
            .map(|(i, c)| {
                let (name, value) = c.split_at_mut(1);
                (own(&mut name[0]), self.value(from + 2 * i + 1, &mut value[0]))
            })
            .collect())
    }

    /// The values `args[from..]` (`args`: all the parser's arguments); one sent as `\N` is `None`.
    pub fn values(&self, args: &mut [Arg<'_>], from: usize) -> Vec<Option<String>> {
        args.iter_mut().enumerate().skip(from).map(|(i, v)| self.value(i, v)).collect()
    }

    fn value(&self, index: usize, v: &mut Arg<'_>) -> Option<String> {
        if self.nulls.get(index).copied().unwrap_or(false) {
            self.nulls_taken.set(self.nulls_taken.get() + 1);
            None
        } else {
            Some(own(v))
        }
    }

    /// `<name> <value>` pairs.
    pub fn pairs(&self, args: &mut [Arg<'_>], u: &str) -> Result<Vec<(String, String)>, Error> {
        if !args.len().is_multiple_of(2) {
            return Err(self.usage(u));
        }
        Ok(args.chunks_mut(2).map(|c| (own(&mut c[0]), own(&mut c[1]))).collect())
    }
}

fn unknown(name: &str) -> Error {
    Error::IllegalCommand(format!("unknown command '{name}' (try help)"))
}

/// One parsed command line.
#[derive(Debug, Clone, PartialEq)]
pub struct Command {
    pub spec: &'static CommandSpec,
    pub cmd: Cmd,
}

impl std::fmt::Debug for CommandSpec {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name)
    }
}

impl PartialEq for CommandSpec {
    fn eq(&self, other: &Self) -> bool {
        self.name == other.name
    }
}

impl Command {
    /// Parse a tokenized command line (its first element is the command name).
    pub fn parse<S: AsRef<str>>(args: &[S]) -> Result<Command, Error> {
        Self::parse_escaped(&mut args.iter().map(|a| Arg::Borrowed(a.as_ref())).collect::<Vec<_>>(), &[])
    }

    /// A command line (not native SQL) as a command: tokenized (with `escape`, `\N` is NULL, and
    /// the parser learns which arguments were: only a value may be), at most `max_args` arguments,
    /// then parsed. Arguments borrow the line where unquoting changed nothing.
    pub fn parse_line(line: &str, escape: bool, max_args: usize) -> Result<Command, Error> {
        let (mut args, nulls): (Vec<Arg<'_>>, Vec<bool>) = if escape {
            tokenize_escaped(line)
                .map_err(|e| Error::IllegalCommand(e.to_string()))?
                .into_iter()
                .map(|a| match a {
                    Some(a) => (a, false),
                    None => (Arg::Borrowed(""), true),
                })
                .unzip()
        } else {
            (tokenize_args(line).map_err(|e| Error::IllegalCommand(e.to_string()))?, Vec::new())
        };
        check_args(args.len(), max_args)?;
        Command::parse_escaped(&mut args, &nulls)
    }

    /// Parse a command line tokenized with the `escape` extension: `nulls[i]` says argument `i`
    /// was `\N`. NULL is a value, never a name, a path or a condition. The parser takes the
    /// arguments it keeps out of `args` (what is left there is unspecified).
    pub fn parse_escaped(args: &mut [Arg<'_>], nulls: &[bool]) -> Result<Command, Error> {
        let Some((name, rest)) = args.split_first_mut() else {
            return Err(Error::IllegalCommand("empty command".into()));
        };
        if nulls.first().copied().unwrap_or(false) {
            return Err(Error::IllegalCommand("\\N (NULL) is not a command".into()));
        }
        let name = lower(name);
        let spec = REGISTRY.get(name.as_ref()).copied().ok_or_else(|| unknown(&name))?;
        let nulls = nulls.get(1..).unwrap_or_default();
        let call = Call { name: &name, spec, nulls, nulls_taken: Cell::new(0) };
        let cmd = (spec.parse)(&call, rest)?;
        if call.nulls_taken.get() != nulls.iter().filter(|n| **n).count() {
            return Err(Error::IllegalCommand(format!("{name}: \\N (NULL) is only allowed as a value")));
        }
        Ok(Command { spec, cmd })
    }

    /// Changes data (audit log).
    pub fn is_write(&self) -> bool {
        self.spec.kind == Kind::Write
    }
}

/// A line of `args` arguments (the command's name counted) against the `max_args` limit.
pub fn check_args(args: usize, max_args: usize) -> Result<(), Error> {
    if args > max_args {
        return Err(Error::LimitExceeded(format!("more than {max_args} arguments")));
    }
    Ok(())
}

/// What a handler did with the reply.
pub enum Outcome {
    /// Rows (if any) are written; the loop ends the reply.
    Done,
    /// No reply at all (`upload`, `put`).
    Silent,
}

/// What a handler works with: the server, this connection, the reply being written.
pub struct Ctx<'a, 'r, W> {
    pub shared: &'a Shared,
    pub st: &'a mut ConnState,
    pub reply: &'a mut Reply<'r, W>,
}

/// Runs a parsed command.
pub async fn run<W: AsyncWrite + Unpin + Send>(cmd: Cmd, cx: Ctx<'_, '_, W>) -> Result<Outcome, Error> {
    match cmd {
        Cmd::Session(c) => session::run(c, cx).await,
        Cmd::Namespace(c) => namespace::run(c, cx).await,
        Cmd::Entries(c) => entries::run(c, cx).await,
        Cmd::Query(c) => query::run(c, cx).await,
        Cmd::Transactions(c) => transactions::run(c, cx).await,
        Cmd::Sequences(c) => sequences::run(c, cx).await,
        Cmd::Acl(c) => acl::run(c, cx).await,
        Cmd::Admin(c) => admin::run(c, cx).await,
        Cmd::Replicas(c) => replicas::run(c, cx).await,
        Cmd::Dump(c) => dump::run(c, cx).await,
    }
}

#[cfg(test)]
mod tests;
