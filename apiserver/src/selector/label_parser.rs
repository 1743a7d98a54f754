//! The label selector query-string syntax: apimachinery's `labels.Lexer` and
//! `labels.Parser`, with their error messages.

use super::error::{Result, SelectorError};
use super::requirement::{Operator, Requirement};
use super::validation::{invalid, qualified_name_errors};

/// Lexes and parses the query-string form (`a=b,c in (x,y),!d`) into requirements, in
/// the order written.
pub(super) fn parse_requirements(input: &str) -> Result<Vec<Requirement>> {
    let tokens = lex(input)?;
    Parser { tokens, position: 0 }.parse()
}

/// Lexer tokens of labels.Lexer.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Token {
    Identifier(String),
    In,
    NotIn,
    Equals,
    DoubleEquals,
    NotEquals,
    GreaterThan,
    LessThan,
    DoesNotExist,
    OpenPar,
    ClosedPar,
    Comma,
    End,
}

impl Token {
    /// The literal as apimachinery prints it in "found '...'" messages.
    fn literal(&self) -> &str {
        match self {
            Token::Identifier(s) => s,
            Token::In => "in",
            Token::NotIn => "notin",
            Token::Equals => "=",
            Token::DoubleEquals => "==",
            Token::NotEquals => "!=",
            Token::GreaterThan => ">",
            Token::LessThan => "<",
            Token::DoesNotExist => "!",
            Token::OpenPar => "(",
            Token::ClosedPar => ")",
            Token::Comma => ",",
            Token::End => "",
        }
    }

    /// In `Values` context the keywords `in`/`notin` are ordinary identifiers.
    fn as_value(&self) -> Token {
        match self {
            Token::In => Token::Identifier("in".to_string()),
            Token::NotIn => Token::Identifier("notin".to_string()),
            other => other.clone(),
        }
    }
}

fn is_special(c: char) -> bool {
    matches!(c, '=' | '!' | '(' | ')' | ',' | '>' | '<')
}

fn special_token(s: &str) -> Option<Token> {
    Some(match s {
        "=" => Token::Equals,
        "==" => Token::DoubleEquals,
        "!=" => Token::NotEquals,
        "!" => Token::DoesNotExist,
        ">" => Token::GreaterThan,
        "<" => Token::LessThan,
        "(" => Token::OpenPar,
        ")" => Token::ClosedPar,
        "," => Token::Comma,
        _ => return None,
    })
}

/// labels.Lexer: whitespace-separated identifiers and the longest matching special symbol.
fn lex(input: &str) -> Result<Vec<Token>> {
    let chars: Vec<char> = input.chars().collect();
    let mut tokens = Vec::new();
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        if matches!(c, ' ' | '\t' | '\r' | '\n') {
            i += 1;
        } else if is_special(c) {
            let mut buffer = String::new();
            let mut last: Option<(Token, usize)> = None;
            let mut j = i;
            while j < chars.len() && is_special(chars[j]) {
                buffer.push(chars[j]);
                if let Some(tok) = special_token(&buffer) {
                    last = Some((tok, j + 1));
                } else if last.is_some() {
                    break;
                }
                j += 1;
            }
            let Some((tok, end)) = last else {
                return Err(SelectorError::InvalidLabelSelector(format!(
                    "unable to parse requirement: found 'error expected: keyword found '{buffer}'', expected: !, identifier, or 'end of string'"
                )));
            };
            tokens.push(tok);
            i = end;
        } else {
            let start = i;
            while i < chars.len() && !is_special(chars[i]) && !matches!(chars[i], ' ' | '\t' | '\r' | '\n') {
                i += 1;
            }
            let word: String = chars[start..i].iter().collect();
            tokens.push(match word.as_str() {
                "in" => Token::In,
                "notin" => Token::NotIn,
                _ => Token::Identifier(word),
            });
        }
    }
    tokens.push(Token::End);
    Ok(tokens)
}

/// labels.Parser over the pre-lexed tokens.
struct Parser {
    tokens: Vec<Token>,
    position: usize,
}

fn requirement_error(msg: String) -> SelectorError {
    SelectorError::InvalidLabelSelector(format!("unable to parse requirement: {msg}"))
}

fn plain_error(msg: String) -> SelectorError {
    SelectorError::InvalidLabelSelector(msg)
}

impl Parser {
    fn lookahead_value(&self) -> Token {
        self.tokens[self.position.min(self.tokens.len() - 1)].as_value()
    }

    fn consume_value(&mut self) -> Token {
        let tok = self.lookahead_value();
        self.position = (self.position + 1).min(self.tokens.len() - 1);
        tok
    }

    fn consume_operator(&mut self) -> Token {
        let tok = self.tokens[self.position.min(self.tokens.len() - 1)].clone();
        self.position = (self.position + 1).min(self.tokens.len() - 1);
        tok
    }

    fn parse(&mut self) -> Result<Vec<Requirement>> {
        let mut requirements = Vec::new();
        // Each iteration consumes at least one token, so the token count bounds the loop.
        for _ in 0..self.tokens.len() {
            match self.lookahead_value() {
                Token::Identifier(_) | Token::DoesNotExist => {
                    requirements.push(self.parse_requirement()?);
                    match self.consume_value() {
                        Token::End => return Ok(requirements),
                        Token::Comma => match self.lookahead_value() {
                            Token::Identifier(_) | Token::DoesNotExist => {}
                            other => {
                                return Err(plain_error(format!(
                                    "found '{}', expected: identifier after ','",
                                    other.literal()
                                )));
                            }
                        },
                        other => {
                            return Err(plain_error(format!(
                                "found '{}', expected: ',' or 'end of string'",
                                other.literal()
                            )));
                        }
                    }
                }
                Token::End => return Ok(requirements),
                other => {
                    return Err(plain_error(format!(
                        "found '{}', expected: !, identifier, or 'end of string'",
                        other.literal()
                    )));
                }
            }
        }
        Ok(requirements)
    }

    fn parse_requirement(&mut self) -> Result<Requirement> {
        let (key, unary) = self.parse_key_and_infer_operator()?;
        if let Some(op) = unary {
            return Requirement::new(&key, op, Vec::new()).map_err(|e| requirement_error(e.to_string()));
        }
        let op = self.parse_operator()?;
        let values = match op {
            Operator::In | Operator::NotIn => self.parse_values()?,
            _ => self.parse_exact_value()?,
        };
        Requirement::new(&key, op, values).map_err(|e| requirement_error(e.to_string()))
    }

    /// Returns the key and, for `key` or `!key`, the unary operator.
    fn parse_key_and_infer_operator(&mut self) -> Result<(String, Option<Operator>)> {
        let mut tok = self.consume_value();
        let mut operator = None;
        if tok == Token::DoesNotExist {
            operator = Some(Operator::DoesNotExist);
            tok = self.consume_value();
        }
        let Token::Identifier(key) = tok else {
            return Err(requirement_error(format!("found '{}', expected: identifier", tok.literal())));
        };
        let key_errs = qualified_name_errors(&key);
        if !key_errs.is_empty() {
            return Err(requirement_error(invalid("<nil>", &key, &key_errs.join("; "))));
        }
        if matches!(self.lookahead_value(), Token::End | Token::Comma) && operator.is_none() {
            operator = Some(Operator::Exists);
        }
        Ok((key, operator))
    }

    fn parse_operator(&mut self) -> Result<Operator> {
        Ok(match self.consume_operator() {
            Token::In => Operator::In,
            Token::Equals => Operator::Equals,
            Token::DoubleEquals => Operator::DoubleEquals,
            Token::GreaterThan => Operator::GreaterThan,
            Token::LessThan => Operator::LessThan,
            Token::NotIn => Operator::NotIn,
            Token::NotEquals => Operator::NotEquals,
            other => {
                return Err(requirement_error(format!(
                    "found '{}', expected: in, notin, =, ==, !=, gt, lt",
                    other.literal()
                )));
            }
        })
    }

    fn parse_values(&mut self) -> Result<Vec<String>> {
        let tok = self.consume_value();
        if tok != Token::OpenPar {
            return Err(requirement_error(format!("found '{}' expected: '('", tok.literal())));
        }
        match self.lookahead_value() {
            Token::Identifier(_) | Token::Comma => {
                let values = self.parse_identifiers_list()?;
                let close = self.consume_value();
                if close != Token::ClosedPar {
                    return Err(requirement_error(format!("found '{}', expected: ')'", close.literal())));
                }
                Ok(values)
            }
            Token::ClosedPar => {
                self.consume_value();
                Ok(vec![String::new()])
            }
            other => Err(requirement_error(format!("found '{}', expected: ',', ')' or identifier", other.literal()))),
        }
    }

    /// A possibly empty list of possibly empty identifiers: `(a,,b)`, `(,a)`, `(a,)`.
    fn parse_identifiers_list(&mut self) -> Result<Vec<String>> {
        let mut values: Vec<String> = Vec::new();
        for _ in 0..self.tokens.len() {
            match self.consume_value() {
                Token::Identifier(value) => {
                    values.push(value);
                    match self.lookahead_value() {
                        Token::Comma => continue,
                        Token::ClosedPar => return Ok(values),
                        other => {
                            return Err(requirement_error(format!(
                                "found '{}', expected: ',' or ')'",
                                other.literal()
                            )));
                        }
                    }
                }
                Token::Comma => {
                    if values.is_empty() {
                        values.push(String::new());
                    }
                    match self.lookahead_value() {
                        Token::ClosedPar => {
                            values.push(String::new());
                            return Ok(values);
                        }
                        Token::Comma => {
                            self.consume_value();
                            values.push(String::new());
                        }
                        _ => {}
                    }
                }
                other => {
                    return Err(requirement_error(format!(
                        "found '{}', expected: ',', or identifier",
                        other.literal()
                    )));
                }
            }
        }
        Ok(values)
    }

    fn parse_exact_value(&mut self) -> Result<Vec<String>> {
        if matches!(self.lookahead_value(), Token::End | Token::Comma) {
            return Ok(vec![String::new()]);
        }
        match self.consume_value() {
            Token::Identifier(value) => Ok(vec![value]),
            other => Err(requirement_error(format!("found '{}', expected: identifier", other.literal()))),
        }
    }
}
