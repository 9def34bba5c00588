//! Principals and Unix-style permissions with ACLs: who may read, write or enter a collection.
//! It decides; it does not fetch. Callers load the facts (owner, bits, ACL rows, groups).

use std::fmt;

use crate::error::{Error, Result};

pub const READ: u16 = 4;
pub const WRITE: u16 = 2;
pub const EXEC: u16 = 1;

/// The authenticated caller of an operation.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Principal {
    pub user: String,
    pub groups: Vec<String>,
    /// A service account (`user_may_sudo`): as itself it may only `sudo` to a non-root user and
    /// run the few commands of [`crate::service::SERVICE_ACCOUNT_COMMANDS`].
    pub may_sudo: bool,
}

impl Principal {
    pub fn is_root(&self) -> bool {
        self.user == "root"
    }
}

/// Nine permission bits, as `chmod` and `ls -l` write them (`rwxr-x---` = 0o750).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Mode(pub u16);

impl Mode {
    /// Parse `rwxr-x---` or an octal number like `750`.
    pub fn parse(s: &str) -> Result<Mode> {
        let bad = || Error::IllegalCommand(format!("invalid permissions '{s}' (use rwxr-x--- or 750)"));
        if s.len() == 9 && s.is_ascii() {
            let mut bits = 0u16;
            for (i, c) in s.chars().enumerate() {
                let expect = ['r', 'w', 'x'][i % 3];
                bits <<= 1;
                if c == expect {
                    bits |= 1;
                } else if c != '-' {
                    return Err(bad());
                }
            }
            return Ok(Mode(bits));
        }
        if (1..=4).contains(&s.len()) && s.chars().all(|c| ('0'..='7').contains(&c)) {
            let v = u16::from_str_radix(s, 8).map_err(|_| bad())?;
            if v <= 0o777 {
                return Ok(Mode(v));
            }
        }
        Err(bad())
    }

    /// Parse the rights of an ACL row in the forms AMGA users type: a positional mask (`r--`,
    /// `rw-`, `r-x`, `---`: exactly three characters, each its letter or `-`), or the granted
    /// letters alone in any order without repeats (`r`, `w`, `x`, `rw`, `wr`, `rx`, `wx`,
    /// `rwx`, `xwr`, ...). Lowercase only. Anything else is code 3.
    pub fn parse_rights(s: &str) -> Result<u16> {
        let bad =
            || Error::IllegalCommand(format!("invalid rights '{s}' (use r, w, x, rw, rx, wx, rwx or a mask like r-x)"));
        let bit = |c: char| match c {
            'r' => Some(READ),
            'w' => Some(WRITE),
            'x' => Some(EXEC),
            _ => None,
        };
        if s.len() == 3 && s.contains('-') {
            let mut bits = 0;
            for (c, expect) in s.chars().zip(['r', 'w', 'x']) {
                bits <<= 1;
                if c == expect {
                    bits |= 1;
                } else if c != '-' {
                    return Err(bad());
                }
            }
            return Ok(bits);
        }
        if s.is_empty() || s.len() > 3 {
            return Err(bad());
        }
        let mut bits = 0;
        for c in s.chars() {
            let b = bit(c).ok_or_else(bad)?;
            if bits & b != 0 {
                return Err(bad());
            }
            bits |= b;
        }
        Ok(bits)
    }

    /// The canonical form `acl_show` prints: the three-character mask (`rw-`).
    pub fn rights_string(bits: u16) -> String {
        let mut s = String::with_capacity(3);
        s.push(if bits & READ != 0 { 'r' } else { '-' });
        s.push(if bits & WRITE != 0 { 'w' } else { '-' });
        s.push(if bits & EXEC != 0 { 'x' } else { '-' });
        s
    }

    pub fn owner(self) -> u16 {
        (self.0 >> 6) & 7
    }
    pub fn group(self) -> u16 {
        (self.0 >> 3) & 7
    }
    pub fn other(self) -> u16 {
        self.0 & 7
    }
}

impl fmt::Display for Mode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{}{}{}",
            Mode::rights_string(self.owner()),
            Mode::rights_string(self.group()),
            Mode::rights_string(self.other())
        )
    }
}

/// One ACL row: extra rights for a user or a group.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AclEntry {
    pub principal: String,
    pub is_group: bool,
    pub rights: u16,
}

/// The facts permission checks need about one object.
#[derive(Debug, Clone)]
pub struct Guard<'a> {
    pub owner: &'a str,
    pub group: &'a str,
    pub mode: Mode,
    pub acl: &'a [AclEntry],
}

impl Guard<'_> {
    /// The rights `who` holds: owner bits, else group bits (if in the group), else other bits,
    /// each widened by matching ACL rows. Root holds everything.
    pub fn rights(&self, who: &Principal) -> u16 {
        if who.is_root() {
            return READ | WRITE | EXEC;
        }
        let base = if who.user == self.owner {
            self.mode.owner()
        } else if who.groups.iter().any(|g| g == self.group) {
            self.mode.group()
        } else {
            self.mode.other()
        };
        self.acl
            .iter()
            .filter(|a| if a.is_group { who.groups.contains(&a.principal) } else { a.principal == who.user })
            .fold(base, |acc, a| acc | a.rights)
    }

    pub fn check(&self, who: &Principal, need: u16, what: &str) -> Result<()> {
        if self.rights(who) & need == need { Ok(()) } else { Err(Error::PermissionDenied(what.to_string())) }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(user: &str, groups: &[&str]) -> Principal {
        Principal { user: user.into(), groups: groups.iter().map(|s| s.to_string()).collect(), may_sudo: false }
    }

    #[test]
    fn mode_parsing() {
        assert_eq!(Mode::parse("rwxr-x---").unwrap(), Mode(0o750));
        assert_eq!(Mode::parse("644").unwrap(), Mode(0o644));
        assert_eq!(Mode(0o750).to_string(), "rwxr-x---");
        assert!(Mode::parse("rwxrwxrwz").is_err());
        assert!(Mode::parse("999").is_err());
    }

    #[test]
    fn rights() {
        let acl = vec![AclEntry { principal: "bob".into(), is_group: false, rights: WRITE }];
        let g = Guard { owner: "alice", group: "atlas", mode: Mode(0o750), acl: &acl };
        assert_eq!(g.rights(&p("alice", &[])), 7);
        assert_eq!(g.rights(&p("carol", &["atlas"])), 5);
        assert_eq!(g.rights(&p("dave", &[])), 0);
        assert_eq!(g.rights(&p("bob", &[])), WRITE);
        assert_eq!(g.rights(&p("root", &[])), 7);
        assert!(g.check(&p("dave", &[]), READ, "/x").is_err());
    }

    #[test]
    fn rights_in_every_form() {
        for (text, bits) in [
            ("r", READ),
            ("w", WRITE),
            ("x", EXEC),
            ("rw", READ | WRITE),
            ("wr", READ | WRITE),
            ("rx", READ | EXEC),
            ("wx", WRITE | EXEC),
            ("rwx", 7),
            ("xwr", 7),
            ("r--", READ),
            ("rw-", READ | WRITE),
            ("r-x", READ | EXEC),
            ("-wx", WRITE | EXEC),
            ("---", 0),
        ] {
            assert_eq!(Mode::parse_rights(text).unwrap(), bits, "{text}");
        }
        for bad in ["", "rr", "rwxx", "q", "R", "rx-", "--r", "r-", "w--x", "rwx-", "r w"] {
            let e = Mode::parse_rights(bad).unwrap_err();
            assert_eq!(e.code(), 3, "{bad}");
        }
        assert_eq!(Mode::rights_string(Mode::parse_rights("xr").unwrap()), "r-x");
    }
}
