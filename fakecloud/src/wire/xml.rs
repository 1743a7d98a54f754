//! A minimal XML writer for EC2 query-protocol responses.

use std::fmt::Display;

/// EC2's response namespace; the SDK ignores it but real EC2 and moto send it.
pub(crate) const EC2_XMLNS: &str = "http://ec2.amazonaws.com/doc/2016-11-15/";

/// Builds a document element by element, closing tags in order.
pub(crate) struct Xml {
    out: String,
    stack: Vec<String>,
}

impl Xml {
    /// `<?xml …?><{root} xmlns="…">` followed by `<requestId>`.
    pub(crate) fn response(root: &str, request_id: &str) -> Self {
        let mut x = Self { out: String::with_capacity(1024), stack: Vec::new() };
        x.out.push_str("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n");
        x.out.push_str(&format!("<{root} xmlns=\"{EC2_XMLNS}\">"));
        x.stack.push(root.to_string());
        x.leaf("requestId", request_id);
        x
    }

    pub(crate) fn open(&mut self, tag: &str) -> &mut Self {
        self.out.push('<');
        self.out.push_str(tag);
        self.out.push('>');
        self.stack.push(tag.to_string());
        self
    }

    pub(crate) fn close(&mut self) -> &mut Self {
        let tag = self.stack.pop().expect("close without open");
        self.out.push_str("</");
        self.out.push_str(&tag);
        self.out.push('>');
        self
    }

    pub(crate) fn leaf(&mut self, tag: &str, value: impl Display) -> &mut Self {
        self.out.push('<');
        self.out.push_str(tag);
        self.out.push('>');
        escape_into(&mut self.out, &value.to_string());
        self.out.push_str("</");
        self.out.push_str(tag);
        self.out.push('>');
        self
    }

    pub(crate) fn opt<T: Display>(&mut self, tag: &str, value: Option<T>) -> &mut Self {
        if let Some(v) = value {
            self.leaf(tag, v);
        }
        self
    }

    /// `<tag><item>v</item>…</tag>`.
    pub(crate) fn items<T: Display>(&mut self, tag: &str, values: impl IntoIterator<Item = T>) -> &mut Self {
        self.open(tag);
        for v in values {
            self.leaf("item", v);
        }
        self.close()
    }

    /// `<tagSet><item><key>k</key><value>v</value></item>…</tagSet>`.
    pub(crate) fn tag_set(&mut self, tags: &crate::tags::Tags) -> &mut Self {
        self.open("tagSet");
        for (k, v) in tags {
            self.open("item").leaf("key", k).leaf("value", v).close();
        }
        self.close()
    }

    pub(crate) fn finish(mut self) -> String {
        while !self.stack.is_empty() {
            self.close();
        }
        self.out
    }
}

fn escape_into(out: &mut String, s: &str) {
    for c in s.chars() {
        match c {
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '&' => out.push_str("&amp;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&apos;"),
            c => out.push(c),
        }
    }
}

/// EC2's error envelope.
pub(crate) fn error_document(code: &str, message: &str, request_id: &str) -> String {
    let mut out = String::from("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<Response><Errors><Error><Code>");
    escape_into(&mut out, code);
    out.push_str("</Code><Message>");
    escape_into(&mut out, message);
    out.push_str("</Message></Error></Errors><RequestID>");
    escape_into(&mut out, request_id);
    out.push_str("</RequestID></Response>");
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn writes_nested_escaped_xml() {
        let mut x = Xml::response("R", "req-1");
        x.open("a").leaf("b", "x<y&z").items("c", ["1", "2"]).close();
        let s = x.finish();
        assert!(s.ends_with("<R xmlns=\"http://ec2.amazonaws.com/doc/2016-11-15/\"><requestId>req-1</requestId><a><b>x&lt;y&amp;z</b><c><item>1</item><item>2</item></c></a></R>"), "{s}");
        assert!(error_document("C", "m&", "r").contains("<Code>C</Code><Message>m&amp;</Message>"));
    }
}
