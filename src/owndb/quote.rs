//! Names and values written into SQL text (DDL cannot take bind parameters): identifiers in
//! double quotes, literals in single quotes, each quote inside doubled. Both backends read them
//! the same way.

/// `"name"`, with any `"` doubled.
pub fn ident(name: &str) -> String {
    format!("\"{}\"", name.replace('"', "\"\""))
}

/// `'text'`, with any `'` doubled.
pub fn literal(text: &str) -> String {
    format!("'{}'", text.replace('\'', "''"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quotes_inside_are_doubled() {
        assert_eq!(ident("we\"ird"), "\"we\"\"ird\"");
        assert_eq!(literal("it's"), "'it''s'");
        assert_eq!(ident("plain"), "\"plain\"");
    }
}
