//! HTML text for the web interface: escaping (every name and value the catalogue holds goes
//! through [`esc`] or [`url`]), the page frame with its navigation, and the small building
//! blocks pages share (forms with their CSRF field, error boxes with a marked position). It
//! only writes markup; it must not call the catalogue or decide anything.

use std::fmt::Write as _;

/// Text escaped for HTML element content and double-quoted attribute values.
pub fn esc(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 8);
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

/// Percent-encodes a URL query value or path piece (everything but unreserved characters;
/// `/` kept when `keep_slash`, for catalogue paths inside `/ui/browse/...`).
fn encode(s: &str, keep_slash: bool) -> String {
    let mut out = String::with_capacity(s.len());
    for b in s.bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.' | b'~') || (keep_slash && b == b'/') {
            out.push(b as char);
        } else {
            let _ = write!(out, "%{b:02X}");
        }
    }
    out
}

/// A query-string value.
pub fn url(s: &str) -> String {
    encode(s, false)
}

/// The browse address of a catalogue path (`/` → `/ui/browse/`).
pub fn browse_href(path: &str) -> String {
    format!("/ui/browse{}", encode(if path.is_empty() { "/" } else { path }, true))
}

/// The page frame: head (stylesheet and script from the binary), navigation with the logout
/// form, `body`. `user` is the logged-in user and their CSRF token (`None` on the login page).
pub fn page(title: &str, user: Option<(&str, &str)>, body: &str) -> String {
    let mut nav = String::new();
    if let Some((u, csrf)) = user {
        let _ = write!(
            nav,
            "<nav aria-label=\"main\"><a href=\"/ui/browse/\">Browse</a> <a href=\"/ui/status\">Status</a>{} \
             <span class=\"who\">{}</span> <form method=\"post\" action=\"/ui/logout\" class=\"inline\">{}\
             <button type=\"submit\" id=\"logout\">Log out</button></form></nav>",
            if u == "root" { " <a href=\"/ui/admin\">Admin</a>" } else { "" },
            esc(u),
            csrf_field(csrf)
        );
    }
    format!(
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\
         <title>{} – ardacat</title><link rel=\"stylesheet\" href=\"/ui/assets/ui.css\">\
         <script src=\"/ui/assets/ui.js\" defer></script></head>\n<body>\
         <header><a class=\"brand\" href=\"/ui/browse/\">ardacat</a>{nav}</header>\n<main>\n{body}\n</main></body></html>\n",
        esc(title)
    )
}

/// The hidden CSRF field every state-changing form carries.
pub fn csrf_field(token: &str) -> String {
    hidden("csrf", token)
}

/// A hidden form field; name and value escaped.
pub fn hidden(name: &str, value: &str) -> String {
    format!("<input type=\"hidden\" name=\"{}\" value=\"{}\">", esc(name), esc(value))
}

/// An error box. A message with `at position N:` (the query parsers' form) also shows `text`
/// with the character at byte `N` marked.
pub fn error_box(message: &str, text: Option<&str>) -> String {
    let mut out = format!("<div class=\"error\" role=\"alert\"><p>{}</p>", esc(message));
    if let (Some(text), Some(pos)) = (text, error_position(message)) {
        let pos = (0..=pos.min(text.len())).rev().find(|&i| text.is_char_boundary(i)).unwrap_or(0);
        let (before, rest) = text.split_at(pos);
        let mark_len = rest.chars().next().map_or(0, char::len_utf8);
        let (marked, after) = rest.split_at(mark_len);
        let marked = if marked.is_empty() { "\u{2038}".to_string() } else { esc(marked) };
        let _ = write!(
            out,
            "<pre class=\"query\">{}<mark class=\"pos\" title=\"position {pos}\">{marked}</mark>{}</pre>",
            esc(before),
            esc(after)
        );
    }
    out.push_str("</div>");
    out
}

/// The byte position in a message like `illegal query: at position 7: …`.
pub fn error_position(message: &str) -> Option<usize> {
    let rest = &message[message.find("at position ")? + "at position ".len()..];
    let digits: String = rest.chars().take_while(char::is_ascii_digit).collect();
    digits.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escapes_markup() {
        assert_eq!(esc("<img src=x onerror=alert(1)>"), "&lt;img src=x onerror=alert(1)&gt;");
        assert_eq!(esc("a\"b'c&"), "a&quot;b&#39;c&amp;");
    }

    #[test]
    fn encodes_urls() {
        assert_eq!(url("a b&c=d/é"), "a%20b%26c%3Dd%2F%C3%A9");
        assert_eq!(browse_href("/a b/<x>"), "/ui/browse/a%20b/%3Cx%3E");
        assert_eq!(browse_href(""), "/ui/browse/");
    }

    #[test]
    fn marks_the_error_position() {
        let m = "illegal query: at position 4: expected an expression";
        assert_eq!(error_position(m), Some(4));
        let html = error_box(m, Some("a > <b"));
        assert!(html.contains("a &gt; <mark class=\"pos\" title=\"position 4\">&lt;</mark>b"), "{html}");
        assert!(error_box(m, Some("ab")).contains("ab<mark"));
        assert_eq!(error_position("no position"), None);
    }
}
