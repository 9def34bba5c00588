//! Collection paths and entry patterns: normalisation, validation and glob matching of the last
//! component. Pure string work; it must not look anything up.

use crate::error::{Error, Result};

/// Longest accepted path, in bytes.
pub const MAX_PATH: usize = 4096;

/// Is `name` a valid collection or entry name (one path component)?
pub fn valid_component(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 255
        && name != "."
        && name != ".."
        && name.chars().all(|c| !c.is_control() && c != '/' && c != ':' && c != '\'' && c != '"')
}

/// Valid attribute name: `[A-Za-z_][A-Za-z0-9_]*`, at most 63 bytes, not a pseudo-attribute.
pub fn valid_attr_name(name: &str) -> bool {
    let mut chars = name.chars();
    matches!(chars.next(), Some(c) if c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
        && name.len() <= 63
        && !is_pseudo_attr(name)
}

/// `FILE`, `OWNER`, `PERMISSIONS`, `GROUP_RIGHT` (any case) name entry properties, not attributes.
pub fn is_pseudo_attr(name: &str) -> bool {
    ["FILE", "OWNER", "PERMISSIONS", "GROUP_RIGHT"].iter().any(|p| p.eq_ignore_ascii_case(name))
}

/// Resolve `path` against the current directory into a normalised absolute path
/// (`/a/b`, never a trailing slash except for the root). `.` and `..` are honoured.
pub fn absolute(cwd: &str, path: &str) -> Result<String> {
    if path.len() > MAX_PATH {
        return Err(Error::IllegalCommand("path too long".into()));
    }
    if path.contains('\0') {
        return Err(Error::IllegalCommand("path contains a NUL byte".into()));
    }
    // Built in one string, each component pushed with its leading `/` and `..` cutting back to
    // the previous `/`: a `get` resolves its path on every call, and joining, collecting the
    // components and formatting them again was four allocations and a tenth of its path work.
    let mut out = String::with_capacity(cwd.len() + path.len() + 1);
    let base = if path.starts_with('/') { "" } else { cwd };
    for part in base.split('/').chain(path.split('/')) {
        match part {
            "" | "." => {}
            ".." => out.truncate(out.rfind('/').unwrap_or(0)),
            other => {
                out.push('/');
                out.push_str(other);
            }
        }
    }
    if out.is_empty() {
        out.push('/');
    }
    Ok(out)
}

/// Split an absolute path into (parent, last component). The root has no parent.
pub fn split(path: &str) -> Option<(&str, &str)> {
    if path == "/" {
        return None;
    }
    let i = path.rfind('/')?;
    Some((if i == 0 { "/" } else { &path[..i] }, &path[i + 1..]))
}

pub fn join(parent: &str, name: &str) -> String {
    // Pushed, not `format!`ed: a getAttributes names every entry it returns this way, and the
    // formatting machinery cost several times the copy.
    let parent = if parent == "/" { "" } else { parent };
    let mut path = String::with_capacity(parent.len() + 1 + name.len());
    path.push_str(parent);
    path.push('/');
    path.push_str(name);
    path
}

/// Does the component contain a glob wildcard?
pub fn has_wildcard(s: &str) -> bool {
    s.contains('*') || s.contains('?')
}

/// Translate a shell glob (`*`, `?`) into a SQL LIKE pattern with `\` as the escape character.
pub fn glob_to_like(glob: &str) -> String {
    let mut out = String::with_capacity(glob.len() + 4);
    for c in glob.chars() {
        match c {
            '*' => out.push('%'),
            '?' => out.push('_'),
            '%' | '_' | '\\' => {
                out.push('\\');
                out.push(c);
            }
            c => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn absolute_paths() {
        assert_eq!(absolute("/", "a").unwrap(), "/a");
        assert_eq!(absolute("/a/b", "../c/./d").unwrap(), "/a/c/d");
        assert_eq!(absolute("/a", "/x/").unwrap(), "/x");
        assert_eq!(absolute("/a", "..").unwrap(), "/");
        assert_eq!(absolute("/", "../..").unwrap(), "/");
    }

    /// How `absolute` resolved paths before it built them in one string.
    fn reference_absolute(cwd: &str, path: &str) -> String {
        let joined = if path.starts_with('/') { path.to_string() } else { format!("{cwd}/{path}") };
        let mut parts: Vec<&str> = Vec::new();
        for p in joined.split('/') {
            match p {
                "" | "." => {}
                ".." => {
                    parts.pop();
                }
                other => parts.push(other),
            }
        }
        format!("/{}", parts.join("/"))
    }

    proptest::proptest! {
        #[test]
        fn absolute_resolves_as_the_reference(cwd in "(/(a|bc|é|\\.|\\.\\.|)){0,4}", path in "/?((a|bc|é|\\.|\\.\\.|)/?){0,5}") {
            let cwd = absolute("/", &cwd).unwrap();
            proptest::prop_assert_eq!(absolute(&cwd, &path).unwrap(), reference_absolute(&cwd, &path));
        }
    }

    #[test]
    fn split_and_join() {
        assert_eq!(split("/a/b"), Some(("/a", "b")));
        assert_eq!(split("/a"), Some(("/", "a")));
        assert_eq!(split("/"), None);
        assert_eq!(join("/", "a"), "/a");
        assert_eq!(join("/a/b", "c"), "/a/b/c");
        assert_eq!(join("/a", ""), "/a/");
    }

    #[test]
    fn names() {
        assert!(valid_attr_name("eventGen"));
        assert!(!valid_attr_name("1a"));
        assert!(!valid_attr_name("file"));
        assert!(!valid_attr_name("a-b"));
        assert!(!valid_attr_name("a\"; drop table x"));
        assert!(valid_component("t1.root"));
        assert!(!valid_component("a'b"));
    }

    #[test]
    fn globs() {
        assert_eq!(glob_to_like("t?_*%"), "t_\\_%\\%");
    }
}
