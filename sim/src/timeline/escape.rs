//! Text into HTML and SVG. Every string the page shows comes from a scenario or a run
//! (names of NodePools, pods, invariant messages, trace lines) and may hold markup, so
//! every one goes through [`escape`], in element text and attribute values alike.

/// `s` with `&`, `<`, `>`, `"` and `'` replaced by character references: safe as element
/// text and inside a quoted attribute value (the HTML standard's escaping set).
pub fn escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn markup_and_quotes_become_references() {
        assert_eq!(
            escape(r#"<script>alert("x")</script> & 'y'"#),
            "&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt; &amp; &#39;y&#39;"
        );
        assert_eq!(escape("plain m5.large · spot"), "plain m5.large · spot");
    }
}
