//! Connection set-up text: the server greeting, the client's option block and the login context
//! block. Builders produce what a client sends; line-at-a-time parsers read what a server receives.
//! Authentication, session lookup and TLS are not done here — this module only says what was asked.
//!
//! Order on the wire (amga.md §2.2):
//!
//! ```text
//! S: ARDA Metadata Server <version>\n
//! S: Protocol 2\n
//! S: <option> <option> …\n
//! C: <option>\n … \n               (empty line ends the options)
//! S: OK\n                          (not after a plain `resume<id>`: those clients never read it)
//! C: 0 <login>\n 5 <password>\n \n  (only on a fresh session; the server answers nothing)
//! ```

use std::fmt;

use thiserror::Error;

use crate::escape::needs_escape;

/// The protocol generation we speak: replies end in `EOT [session<id>] EOT`.
pub const PROTOCOL_VERSION: u32 = 2;
/// Text before the version on the first greeting line.
pub const BANNER_PREFIX: &str = "ARDA Metadata Server ";
const PROTOCOL_PREFIX: &str = "Protocol ";
/// Context key of the login name.
pub const LOGIN_KEY: u32 = 0;
/// Context key of the password.
pub const PASSWORD_KEY: u32 = 5;
/// Bounds on what a client may send before it is authenticated.
pub const MAX_OPTION_WORDS: usize = 64;
pub const MAX_CONTEXT_LINES: usize = 64;

#[derive(Debug, Error, Clone, PartialEq, Eq)]
pub enum HandshakeError {
    #[error("greeting does not start with \"{BANNER_PREFIX}<version>\"")]
    BadBanner,
    #[error("malformed protocol line in greeting")]
    BadProtocolLine,
    #[error("invalid option word {word:?}")]
    BadOption { word: String },
    #[error("malformed resume option {word:?}")]
    BadResume { word: String },
    #[error("conflicting connection options")]
    ConflictingOptions,
    #[error("too many option words (limit {limit})")]
    TooManyOptions { limit: usize },
    // Never echoes the line: it may hold a password.
    #[error("malformed login context line {line}")]
    BadContextLine { line: usize },
    #[error("login context key {key} given twice")]
    DuplicateKey { key: u32 },
    #[error("login context has no login line (key 0)")]
    MissingLogin,
    #[error("too many login context lines (limit {limit})")]
    TooManyContextLines { limit: usize },
    #[error("value for context key {key} cannot be sent on one line")]
    UnframeableValue { key: u32 },
}

/// One option word is non-empty and holds no whitespace or framing byte.
fn is_option_word(word: &str) -> bool {
    !word.is_empty() && !word.chars().any(char::is_whitespace) && !needs_escape(word)
}

/// The three greeting lines. Fields are checked on construction, so a `Greeting` always encodes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Greeting {
    version: String,
    protocol: u32,
    options: Vec<String>,
}

impl Greeting {
    /// A protocol-2 greeting advertising `options` (e.g. `["plain", "ssl", "resume", "escape"]`).
    pub fn new<I, S>(version: impl Into<String>, options: I) -> Result<Self, HandshakeError>
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        let version = version.into();
        if version.is_empty() || needs_escape(&version) {
            return Err(HandshakeError::BadBanner);
        }
        let options = options.into_iter().map(Into::into).collect::<Vec<String>>();
        if let Some(word) = options.iter().find(|w| !is_option_word(w)) {
            return Err(HandshakeError::BadOption { word: word.clone() });
        }
        Ok(Self { version, protocol: PROTOCOL_VERSION, options })
    }

    /// Reads the three greeting lines (without line ends) as a client receives them.
    pub fn parse(banner: &str, protocol: &str, options: &str) -> Result<Self, HandshakeError> {
        let version = banner
            .strip_prefix(BANNER_PREFIX)
            .filter(|v| !v.is_empty() && !needs_escape(v))
            .ok_or(HandshakeError::BadBanner)?;
        let number = protocol
            .strip_prefix(PROTOCOL_PREFIX)
            .filter(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()))
            .and_then(|n| n.parse::<u32>().ok())
            .ok_or(HandshakeError::BadProtocolLine)?;
        let words = options.split_whitespace().map(str::to_owned).collect::<Vec<_>>();
        if let Some(word) = words.iter().find(|w| !is_option_word(w)) {
            return Err(HandshakeError::BadOption { word: word.clone() });
        }
        Ok(Self { version: version.to_owned(), protocol: number, options: words })
    }

    pub fn version(&self) -> &str {
        &self.version
    }

    pub fn protocol(&self) -> u32 {
        self.protocol
    }

    pub fn options(&self) -> &[String] {
        &self.options
    }

    pub fn has_option(&self, option: &str) -> bool {
        self.options.iter().any(|o| o == option)
    }

    /// The exact greeting bytes, three `\n`-terminated lines.
    pub fn encode(&self) -> String {
        format!("{BANNER_PREFIX}{}\n{PROTOCOL_PREFIX}{}\n{}\n", self.version, self.protocol, self.options.join(" "))
    }
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Transport {
    #[default]
    Plain,
    Ssl,
}

/// What the client asked for in its option block.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ClientOptions {
    pub transport: Transport,
    /// Session id from `resume<id>` / `resumeSSL<id>`.
    pub resume: Option<u64>,
    /// Our extension: the client understands escaped values (see [`crate::escape`]).
    pub escape: bool,
    /// Option words we do not know, kept so the server can log them.
    pub other: Vec<String>,
}

impl ClientOptions {
    pub fn new(transport: Transport) -> Self {
        Self { transport, ..Self::default() }
    }

    pub fn with_resume(mut self, session: u64) -> Self {
        self.resume = Some(session);
        self
    }

    pub fn with_escape(mut self, escape: bool) -> Self {
        self.escape = escape;
        self
    }

    /// Whether the server answers the option block with `OK\n`. The classic clients do not read
    /// one after a plain `resume`, so sending it there would shift every later reply by a line.
    pub fn expects_ok(&self) -> bool {
        !(self.resume.is_some() && self.transport == Transport::Plain)
    }

    /// Whether a login context block follows; a resumed session carries its identity already.
    pub fn expects_login(&self) -> bool {
        self.resume.is_none()
    }

    /// The option block as the client sends it, one word per line, ended by an empty line.
    pub fn encode(&self) -> Result<String, HandshakeError> {
        let mut out = match (self.transport, self.resume) {
            (Transport::Plain, None) => "plain\n".to_owned(),
            (Transport::Ssl, None) => "ssl\n".to_owned(),
            (Transport::Plain, Some(id)) => format!("resume{id}\n"),
            (Transport::Ssl, Some(id)) => format!("resumeSSL{id}\n"),
        };
        if self.escape {
            out.push_str("escape\n");
        }
        for word in &self.other {
            // A known word here would silently change the meaning of the block.
            let known = !matches!(classify(word), Ok(Word::Other));
            if !is_option_word(word) || known {
                return Err(HandshakeError::BadOption { word: word.clone() });
            }
            out.push_str(word);
            out.push('\n');
        }
        out.push('\n');
        Ok(out)
    }
}

enum Word {
    Transport(Transport),
    Resume(Transport, u64),
    Escape,
    Other,
}

fn classify(word: &str) -> Result<Word, HandshakeError> {
    let resume = |transport, digits: &str| {
        if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
            return Err(HandshakeError::BadResume { word: word.chars().take(64).collect() });
        }
        digits
            .parse::<u64>()
            .map(|id| Word::Resume(transport, id))
            .map_err(|_| HandshakeError::BadResume { word: word.chars().take(64).collect() })
    };
    Ok(match word {
        "plain" => Word::Transport(Transport::Plain),
        "ssl" => Word::Transport(Transport::Ssl),
        "escape" => Word::Escape,
        _ => {
            if let Some(digits) = word.strip_prefix("resumeSSL") {
                resume(Transport::Ssl, digits)?
            } else if let Some(digits) = word.strip_prefix("resume") {
                resume(Transport::Plain, digits)?
            } else {
                Word::Other
            }
        }
    })
}

/// Reads the client's option block one line at a time (server side).
#[derive(Debug, Default)]
pub struct OptionsParser {
    options: ClientOptions,
    transport_chosen: bool,
    words: usize,
}

impl OptionsParser {
    pub fn new() -> Self {
        Self::default()
    }

    /// Feeds one line (without line end). Returns the options once the terminating empty line
    /// arrives; several words on one line are accepted too. No words at all means `plain`.
    pub fn push_line(&mut self, line: &str) -> Result<Option<ClientOptions>, HandshakeError> {
        if line.is_empty() {
            let options = std::mem::take(&mut self.options);
            *self = Self::default();
            return Ok(Some(options));
        }
        for word in line.split_whitespace() {
            self.words += 1;
            if self.words > MAX_OPTION_WORDS {
                return Err(HandshakeError::TooManyOptions { limit: MAX_OPTION_WORDS });
            }
            match classify(word)? {
                Word::Transport(transport) => self.choose(transport, None)?,
                Word::Resume(transport, id) => self.choose(transport, Some(id))?,
                Word::Escape => self.options.escape = true,
                Word::Other => {
                    if !is_option_word(word) {
                        return Err(HandshakeError::BadOption { word: word.chars().take(64).collect() });
                    }
                    self.options.other.push(word.to_owned());
                }
            }
        }
        Ok(None)
    }

    fn choose(&mut self, transport: Transport, resume: Option<u64>) -> Result<(), HandshakeError> {
        // Repeating the same choice is harmless; two different ones leave us guessing which
        // transport or session the client meant, so refuse.
        if self.transport_chosen && (self.options.transport != transport || self.options.resume != resume) {
            return Err(HandshakeError::ConflictingOptions);
        }
        self.transport_chosen = true;
        self.options.transport = transport;
        self.options.resume = resume;
        Ok(())
    }
}

/// The login context block. `Debug` hides the password and the values of unknown keys.
#[derive(Clone, Default, PartialEq, Eq)]
pub struct LoginContext {
    /// May be empty: the identity then comes from the client certificate.
    pub login: String,
    pub password: Option<String>,
    /// Other numeric keys (permission masks, home directory … from richer clients).
    pub other: Vec<(u32, String)>,
}

impl fmt::Debug for LoginContext {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let keys: Vec<u32> = self.other.iter().map(|(k, _)| *k).collect();
        f.debug_struct("LoginContext")
            .field("login", &self.login)
            .field("password", &self.password.as_ref().map(|_| "<redacted>"))
            .field("other_keys", &keys)
            .finish()
    }
}

impl LoginContext {
    pub fn new(login: impl Into<String>) -> Self {
        Self { login: login.into(), ..Self::default() }
    }

    pub fn with_password(mut self, password: impl Into<String>) -> Self {
        self.password = Some(password.into());
        self
    }

    /// The block as the client sends it: `0 <login>`, `5 <password>` if set, other keys, empty line.
    pub fn encode(&self) -> Result<String, HandshakeError> {
        let mut out = String::new();
        let mut push = |key: u32, value: &str| {
            if needs_escape(value) {
                return Err(HandshakeError::UnframeableValue { key });
            }
            out.push_str(&format!("{key} {value}\n"));
            Ok(())
        };
        push(LOGIN_KEY, &self.login)?;
        if let Some(password) = &self.password {
            push(PASSWORD_KEY, password)?;
        }
        let mut seen = vec![LOGIN_KEY, PASSWORD_KEY];
        for (key, value) in &self.other {
            if seen.contains(key) {
                return Err(HandshakeError::DuplicateKey { key: *key });
            }
            seen.push(*key);
            push(*key, value)?;
        }
        out.push('\n');
        Ok(out)
    }
}

/// Reads the login context block one line at a time (server side).
#[derive(Debug, Default)]
pub struct LoginParser {
    context: LoginContext,
    saw_login: bool,
    lines: usize,
}

impl LoginParser {
    pub fn new() -> Self {
        Self::default()
    }

    /// Feeds one line (without line end): `<key> <value>`, the value being the rest of the line
    /// verbatim (passwords may hold spaces). Returns the context at the terminating empty line.
    pub fn push_line(&mut self, line: &str) -> Result<Option<LoginContext>, HandshakeError> {
        if line.is_empty() {
            if !self.saw_login {
                return Err(HandshakeError::MissingLogin);
            }
            let context = std::mem::take(&mut self.context);
            *self = Self::default();
            return Ok(Some(context));
        }
        self.lines += 1;
        if self.lines > MAX_CONTEXT_LINES {
            return Err(HandshakeError::TooManyContextLines { limit: MAX_CONTEXT_LINES });
        }
        let bad = HandshakeError::BadContextLine { line: self.lines };
        let (key, value) = line.split_once(' ').unwrap_or((line, ""));
        if key.is_empty() || key.len() > 10 || !key.bytes().all(|b| b.is_ascii_digit()) {
            return Err(bad);
        }
        let key = key.parse::<u32>().map_err(|_| bad)?;
        let duplicate = match key {
            LOGIN_KEY => std::mem::replace(&mut self.saw_login, true),
            PASSWORD_KEY => self.context.password.is_some(),
            _ => self.context.other.iter().any(|(k, _)| *k == key),
        };
        if duplicate {
            return Err(HandshakeError::DuplicateKey { key });
        }
        match key {
            LOGIN_KEY => self.context.login = value.to_owned(),
            PASSWORD_KEY => self.context.password = Some(value.to_owned()),
            _ => self.context.other.push((key, value.to_owned())),
        }
        Ok(None)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn parse_options(block: &str) -> Result<Option<ClientOptions>, HandshakeError> {
        let mut parser = OptionsParser::new();
        let mut result = Ok(None);
        for line in block.split('\n') {
            result = parser.push_line(line);
            if !matches!(result, Ok(None)) {
                break;
            }
        }
        result
    }

    fn parse_login(block: &str) -> Result<Option<LoginContext>, HandshakeError> {
        let mut parser = LoginParser::new();
        let mut result = Ok(None);
        for line in block.split('\n') {
            result = parser.push_line(line);
            if !matches!(result, Ok(None)) {
                break;
            }
        }
        result
    }

    #[test]
    fn greeting_exact_bytes() -> Result<(), HandshakeError> {
        let greeting = Greeting::new("1.3.0", ["plain", "ssl", "resume", "escape"])?;
        assert_eq!(greeting.encode(), "ARDA Metadata Server 1.3.0\nProtocol 2\nplain ssl resume escape\n");
        let no_options = Greeting::new("0.1.0", Vec::<String>::new())?;
        assert_eq!(no_options.encode(), "ARDA Metadata Server 0.1.0\nProtocol 2\n\n");
        Ok(())
    }

    #[test]
    fn greeting_refuses_unframeable_parts() {
        assert_eq!(Greeting::new("1.0\n", ["plain"]), Err(HandshakeError::BadBanner));
        assert_eq!(Greeting::new("", ["plain"]), Err(HandshakeError::BadBanner));
        assert!(matches!(Greeting::new("1", ["pl ain"]), Err(HandshakeError::BadOption { .. })));
        assert!(matches!(Greeting::new("1", [""]), Err(HandshakeError::BadOption { .. })));
    }

    #[test]
    fn greeting_parses_what_it_encodes() -> Result<(), HandshakeError> {
        let greeting = Greeting::new("1.3.0", ["plain", "escape"])?;
        let text = greeting.encode();
        let lines: Vec<&str> = text.split('\n').collect();
        let parsed = Greeting::parse(lines[0], lines[1], lines[2])?;
        assert_eq!(parsed, greeting);
        assert!(parsed.has_option("escape") && !parsed.has_option("ssl"));
        let old = Greeting::parse("ARDA Metadata Server 1.2.0", "Protocol 1", "")?;
        assert_eq!((old.version(), old.protocol()), ("1.2.0", 1));
        assert!(old.options().is_empty());
        assert_eq!(Greeting::parse("Welcome", "Protocol 2", ""), Err(HandshakeError::BadBanner));
        assert_eq!(Greeting::parse("ARDA Metadata Server 1", "Protokol 2", ""), Err(HandshakeError::BadProtocolLine));
        assert_eq!(Greeting::parse("ARDA Metadata Server 1", "Protocol x", ""), Err(HandshakeError::BadProtocolLine));
        Ok(())
    }

    #[test]
    fn option_blocks_from_classic_clients() {
        assert_eq!(parse_options("plain\n\n"), Ok(Some(ClientOptions::new(Transport::Plain))));
        assert_eq!(parse_options("ssl\n\n"), Ok(Some(ClientOptions::new(Transport::Ssl))));
        let resumed = ClientOptions::new(Transport::Plain).with_resume(42);
        assert_eq!(parse_options("resume42\n\n"), Ok(Some(resumed.clone())));
        assert!(!resumed.expects_ok() && !resumed.expects_login());
        let resumed_ssl = ClientOptions::new(Transport::Ssl).with_resume(7);
        assert_eq!(parse_options("resumeSSL7\n\n"), Ok(Some(resumed_ssl.clone())));
        assert!(resumed_ssl.expects_ok() && !resumed_ssl.expects_login());
        assert_eq!(parse_options("\n"), Ok(Some(ClientOptions::default())));
    }

    #[test]
    fn option_extensions_and_unknowns() {
        let parsed = parse_options("plain\nescape\nzip v3\n\n");
        let expected = ClientOptions {
            transport: Transport::Plain,
            resume: None,
            escape: true,
            other: vec!["zip".into(), "v3".into()],
        };
        assert_eq!(parsed, Ok(Some(expected)));
    }

    #[test]
    fn option_errors() {
        assert_eq!(parse_options("plain\nssl\n\n"), Err(HandshakeError::ConflictingOptions));
        assert_eq!(parse_options("resume1\nresume2\n\n"), Err(HandshakeError::ConflictingOptions));
        assert_eq!(parse_options("ssl\nssl\n\n").map(|o| o.is_some()), Ok(true));
        for word in ["resume", "resumex", "resumeSSL", "resume99999999999999999999999"] {
            assert!(matches!(parse_options(&format!("{word}\n\n")), Err(HandshakeError::BadResume { .. })), "{word}");
        }
        let many = "x\n".repeat(MAX_OPTION_WORDS + 1);
        assert_eq!(parse_options(&many), Err(HandshakeError::TooManyOptions { limit: MAX_OPTION_WORDS }));
        assert!(matches!(parse_options("a\u{4}b\n\n"), Err(HandshakeError::BadOption { .. })));
    }

    #[test]
    fn options_parser_is_reusable_after_a_block() {
        let mut parser = OptionsParser::new();
        assert_eq!(parser.push_line("ssl"), Ok(None));
        assert!(parser.push_line("").is_ok_and(|o| o.is_some()));
        assert_eq!(parser.push_line("plain"), Ok(None));
        assert_eq!(parser.push_line(""), Ok(Some(ClientOptions::new(Transport::Plain))));
    }

    #[test]
    fn option_builder_bytes() -> Result<(), HandshakeError> {
        assert_eq!(ClientOptions::new(Transport::Plain).encode()?, "plain\n\n");
        assert_eq!(ClientOptions::new(Transport::Ssl).encode()?, "ssl\n\n");
        assert_eq!(ClientOptions::new(Transport::Plain).with_resume(9).encode()?, "resume9\n\n");
        assert_eq!(
            ClientOptions::new(Transport::Ssl).with_resume(9).with_escape(true).encode()?,
            "resumeSSL9\nescape\n\n"
        );
        let mut sneaky = ClientOptions::new(Transport::Plain);
        sneaky.other.push("ssl".into());
        assert!(matches!(sneaky.encode(), Err(HandshakeError::BadOption { .. })));
        sneaky.other = vec![String::new()];
        assert!(matches!(sneaky.encode(), Err(HandshakeError::BadOption { .. })));
        Ok(())
    }

    #[test]
    fn login_blocks() {
        assert_eq!(
            parse_login("0 alice\n5 secret word\n\n"),
            Ok(Some(LoginContext::new("alice").with_password("secret word")))
        );
        assert_eq!(parse_login("0 \n\n"), Ok(Some(LoginContext::new(""))));
        assert_eq!(parse_login("0\n\n"), Ok(Some(LoginContext::new(""))));
        let with_other = LoginContext { login: "bob".into(), password: None, other: vec![(3, "/home/bob".into())] };
        assert_eq!(parse_login("3 /home/bob\n0 bob\n\n"), Ok(Some(with_other)));
    }

    #[test]
    fn login_errors_never_echo_secrets() {
        assert_eq!(parse_login("5 pw\n\n"), Err(HandshakeError::MissingLogin));
        assert_eq!(parse_login("0 a\n0 b\n\n"), Err(HandshakeError::DuplicateKey { key: 0 }));
        assert_eq!(parse_login("0 a\n5 x\n5 y\n"), Err(HandshakeError::DuplicateKey { key: 5 }));
        let err = parse_login("0 a\nhunter2 x\n");
        assert_eq!(err, Err(HandshakeError::BadContextLine { line: 2 }));
        assert!(err.is_err_and(|e| !e.to_string().contains("hunter2")));
        assert_eq!(parse_login("99999999999 x\n"), Err(HandshakeError::BadContextLine { line: 1 }));
        assert_eq!(parse_login(&"7 x\n".repeat(MAX_CONTEXT_LINES + 1)), Err(HandshakeError::DuplicateKey { key: 7 }));
        let many: String = (0..=MAX_CONTEXT_LINES).map(|k| format!("{} v\n", k + 10)).collect();
        assert_eq!(parse_login(&many), Err(HandshakeError::TooManyContextLines { limit: MAX_CONTEXT_LINES }));
    }

    #[test]
    fn login_builder_and_redaction() -> Result<(), HandshakeError> {
        let ctx = LoginContext::new("alice").with_password("secret");
        assert_eq!(ctx.encode()?, "0 alice\n5 secret\n\n");
        assert_eq!(LoginContext::new("").encode()?, "0 \n\n");
        assert!(!format!("{ctx:?}").contains("secret"));
        assert_eq!(
            LoginContext::new("a").with_password("x\ny").encode(),
            Err(HandshakeError::UnframeableValue { key: 5 })
        );
        let dup = LoginContext { other: vec![(5, "x".into())], ..LoginContext::new("a") };
        assert_eq!(dup.encode(), Err(HandshakeError::DuplicateKey { key: 5 }));
        Ok(())
    }

    proptest! {
        #[test]
        fn login_round_trips(
            login in "[^\n\r\u{4}\u{18}\0]*",
            password in proptest::option::of("[^\n\r\u{4}\u{18}\0]*"),
            other in proptest::collection::btree_map(6u32..1000, "[^\n\r\u{4}\u{18}\0]*", 0..4),
        ) {
            let ctx = LoginContext { login, password, other: other.into_iter().collect() };
            let block = ctx.encode().map_err(|e| TestCaseError::fail(e.to_string()))?;
            prop_assert_eq!(parse_login(&block), Ok(Some(ctx)));
        }

        #[test]
        fn options_round_trip(
            ssl in any::<bool>(),
            resume in proptest::option::of(any::<u64>()),
            escape in any::<bool>(),
            other in proptest::collection::vec("[a-z][a-z0-9]{0,8}", 0..4),
        ) {
            let other: Vec<String> = other.into_iter()
                .filter(|w| !matches!(w.as_str(), "plain" | "ssl" | "escape") && !w.starts_with("resume"))
                .collect();
            let transport = if ssl { Transport::Ssl } else { Transport::Plain };
            let opts = ClientOptions { transport, resume, escape, other };
            let block = opts.encode().map_err(|e| TestCaseError::fail(e.to_string()))?;
            prop_assert_eq!(parse_options(&block), Ok(Some(opts)));
        }

        #[test]
        fn parsers_never_panic(lines in proptest::collection::vec(any::<String>(), 0..8)) {
            let mut options = OptionsParser::new();
            let mut login = LoginParser::new();
            for line in &lines {
                let _ = options.push_line(line);
                let _ = login.push_line(line);
            }
            if lines.len() >= 3 {
                let _ = Greeting::parse(&lines[0], &lines[1], &lines[2]);
            }
        }
    }
}
