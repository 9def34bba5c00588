//! Tab completion for the `Query>` shell: the first word completes to a command name from the
//! server's command table (`help`, read once per [`Completer`]), any later word to a collection
//! or entry path from the server's `dir` listing of the directory typed so far (narrowed to the
//! typed name prefix). It only asks;
//! it must not print, and a failed look-up (permission, lost connection) completes nothing.

use crate::client::Client;

/// Completes command lines against one server.
#[derive(Debug, Default)]
pub struct Completer {
    /// Words the shell itself understands (`quit`, `\format`, …), offered with the server's.
    local: Vec<String>,
    /// The server's command names, once read.
    commands: Option<Vec<String>>,
}

/// The word the cursor is in: where it starts in the line, its text up to the cursor, and
/// whether it is the command name.
fn word_at(line: &str, pos: usize) -> (usize, &str, bool) {
    let before = &line[..pos];
    let start = before.rfind(|c: char| c.is_whitespace() || c == '\'').map_or(0, |i| i + 1);
    let first = before[..start].trim().is_empty();
    (start, &before[start..], first)
}

/// A path prefix → the directory to list and the offset in the prefix where the name starts:
/// `/a/b/c` → (`/a/b`, 5), `/c` → (`/`, 1), `c` → (`.`, 0), `a/` → (`a`, 2).
fn split_path(prefix: &str) -> (String, usize) {
    match prefix.rfind('/') {
        None => (".".into(), 0),
        Some(0) => ("/".into(), 1),
        Some(i) => (prefix[..i].to_string(), i + 1),
    }
}

/// What to ask `dir` for: the directory, narrowed by the server to `<prefix>*` when the prefix
/// has no wildcard of its own (a directory of a million entries answers only the few that fit).
fn listing(dir: &str, prefix: &str) -> String {
    if prefix.is_empty() || prefix.contains(['*', '?']) {
        return dir.to_string();
    }
    match dir {
        "." => format!("{prefix}*"),
        "/" => format!("/{prefix}*"),
        _ => format!("{dir}/{prefix}*"),
    }
}

impl Completer {
    /// A completer that also offers these shell words for the command name.
    pub fn new<S: AsRef<str>>(local: &[S]) -> Completer {
        Completer { local: local.iter().map(|s| s.as_ref().to_string()).collect(), commands: None }
    }

    /// Where the text to replace starts in `line` and its candidates, sorted and without
    /// duplicates, for the cursor at byte `pos`. A collection's candidate ends with `/` so that
    /// the next Tab goes on into it.
    pub async fn complete(&mut self, client: &mut Client, line: &str, pos: usize) -> (usize, Vec<String>) {
        let pos = pos.min(line.len());
        if !line.is_char_boundary(pos) {
            return (pos, Vec::new());
        }
        let (start, word, first) = word_at(line, pos);
        let mut found = if first {
            let names = self.command_names(client).await;
            let lower = word.to_ascii_lowercase();
            names.iter().filter(|n| n.starts_with(&lower)).cloned().collect::<Vec<_>>()
        } else {
            let (dir, name_at) = split_path(word);
            let prefix = &word[name_at..];
            let Ok(items) = client.dir(&listing(&dir, prefix)).await else { return (pos, Vec::new()) };
            let found = items
                .into_iter()
                .filter_map(|(path, kind)| {
                    let name = path.rsplit('/').next().unwrap_or(&path).to_string();
                    let slash = if kind == "collection" { "/" } else { "" };
                    (!name.is_empty() && name.starts_with(prefix)).then(|| format!("{name}{slash}"))
                })
                .collect::<Vec<_>>();
            return (start + name_at, sorted(found));
        };
        found.extend(self.local.iter().filter(|n| n.starts_with(word)).cloned());
        (start, sorted(found))
    }

    /// The server's command names (first word of each `help` line); none if `help` fails (then
    /// asked again next time).
    async fn command_names(&mut self, client: &mut Client) -> Vec<String> {
        if let Some(names) = &self.commands {
            return names.clone();
        }
        let Ok(lines) = client.execute("help").await else { return Vec::new() };
        let names: Vec<String> =
            lines.iter().filter_map(|l| l.split_whitespace().next()).map(|w| w.to_ascii_lowercase()).collect();
        self.commands = Some(names.clone());
        names
    }
}

fn sorted(mut v: Vec<String>) -> Vec<String> {
    v.sort();
    v.dedup();
    v
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn words_and_paths() {
        assert_eq!(word_at("get", 3), (0, "get", true));
        assert_eq!(word_at("  get", 5), (2, "get", true));
        assert_eq!(word_at("getattr /da", 11), (8, "/da", false));
        assert_eq!(word_at("getattr /data/x a", 9), (8, "/", false));
        assert_eq!(word_at("find /d '/d:a", 13), (9, "/d:a", false));
        assert_eq!(word_at("ls ", 3), (3, "", false));
        assert_eq!(split_path("/a/b/c"), ("/a/b".to_string(), 5));
        assert_eq!(split_path("/c"), ("/".to_string(), 1));
        assert_eq!(split_path("c"), (".".to_string(), 0));
        assert_eq!(split_path("a/"), ("a".to_string(), 2));
        assert_eq!(split_path(""), (".".to_string(), 0));
        assert_eq!(listing("/a", "ru"), "/a/ru*");
        assert_eq!(listing("/", "d"), "/d*");
        assert_eq!(listing(".", "d"), "d*");
        assert_eq!(listing("/a", ""), "/a");
        assert_eq!(listing("/a", "r?"), "/a");
    }
}
