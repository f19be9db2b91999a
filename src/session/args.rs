//! Typed access to a command's arguments: maps (literal, bound name or nested command),
//! flags, `key=value` options, tuples.

use super::Session;
use crate::map::IndexingMap;
use crate::syntax::{Arg, ArgGroup, CommandCall, Diagnostic, Span};
use crate::value::Value;

pub struct Args<'a> {
    pub call: &'a CommandCall,
}

impl<'a> Args<'a> {
    pub fn new(call: &'a CommandCall) -> Args<'a> {
        Args { call }
    }
    pub fn span(&self) -> Span {
        self.call.span
    }
    pub fn groups(&self) -> &'a [ArgGroup] {
        &self.call.groups
    }
    /// Every argument, across groups.
    pub fn items(&self) -> impl Iterator<Item = &'a Arg> {
        self.call.groups.iter().flat_map(|g| g.items.iter())
    }
    /// Fails unless there are exactly `n` comma-separated groups.
    pub fn expect_groups(&self, n: usize, usage: &str) -> Result<(), Diagnostic> {
        if self.call.groups.len() != n {
            let span = self.call.groups.get(n).map_or(self.call.span, |g| g.span);
            return Err(Diagnostic::at(
                format!(
                    "`{}` takes {n} argument{}",
                    self.call.name,
                    if n == 1 { "" } else { "s" }
                ),
                span,
            )
            .with_help(format!("usage: {usage}")));
        }
        Ok(())
    }
    /// Whether a bare word such as `explain` or `raw` appears.
    pub fn flag(&self, word: &str) -> bool {
        self.items()
            .any(|a| matches!(a, Arg::Word(w, _) if w == word))
    }
    /// The value of `key=value`, if given.
    pub fn kv(&self, key: &str) -> Option<&'a Arg> {
        self.items().find_map(|a| match a {
            Arg::Kv(k, v, _) if k == key => Some(v.as_ref()),
            _ => None,
        })
    }
    pub fn kv_int(&self, key: &str) -> Result<Option<i64>, Diagnostic> {
        match self.kv(key) {
            None => Ok(None),
            Some(Arg::Int(v, _)) => Ok(Some(*v)),
            Some(a) => Err(Diagnostic::at(
                format!("`{key}=` takes an integer"),
                a.span(),
            )),
        }
    }
    pub fn kv_word(&self, key: &str) -> Result<Option<String>, Diagnostic> {
        match self.kv(key) {
            None => Ok(None),
            Some(Arg::Word(w, _)) | Some(Arg::Str(w, _)) => Ok(Some(w.clone())),
            Some(Arg::Int(v, _)) => Ok(Some(v.to_string())),
            Some(a) => Err(Diagnostic::at(format!("`{key}=` takes a word"), a.span())),
        }
    }
    pub fn kv_tuple(&self, key: &str) -> Result<Option<Vec<i64>>, Diagnostic> {
        match self.kv(key) {
            None => Ok(None),
            Some(Arg::Int(v, _)) => Ok(Some(vec![*v])),
            Some(Arg::Tuple(items, _)) => items
                .iter()
                .map(|a| match a {
                    Arg::Int(v, _) => Ok(*v),
                    a => Err(Diagnostic::at(format!("`{key}=` takes integers"), a.span())),
                })
                .collect::<Result<Vec<_>, _>>()
                .map(Some),
            Some(a) => Err(Diagnostic::at(
                format!("`{key}=` takes a tuple like (1, 2)"),
                a.span(),
            )),
        }
    }
    /// The word after `word` (as in `show m as mlir`, `plot m to f.svg`).
    pub fn after(&self, word: &str) -> Option<&'a Arg> {
        let items: Vec<&Arg> = self.items().collect();
        items
            .iter()
            .position(|a| matches!(a, Arg::Word(w, _) if w == word))
            .and_then(|i| items.get(i + 1).copied())
    }

    /// Evaluates group `i` (its leading items) to a value: a map literal, a bound name, or a
    /// nested command (`simplify m`).
    pub fn value(&self, session: &mut Session, i: usize) -> Result<Value, Diagnostic> {
        let Some(group) = self.call.groups.get(i) else {
            return Err(Diagnostic::at(
                format!("`{}` needs an argument here", self.call.name),
                self.call.span,
            ));
        };
        group_value(session, group)
    }

    /// Group `i` as a map.
    pub fn map(&self, session: &mut Session, i: usize) -> Result<IndexingMap, Diagnostic> {
        let span = self.call.groups.get(i).map_or(self.call.span, |g| g.span);
        match self.value(session, i)? {
            Value::Map(m) => Ok(m),
            Value::Layout(l) => Ok(l.map),
            Value::Explained { map, .. } => Ok(map),
            Value::Maps(ms) if ms.len() == 1 => Ok(ms.into_iter().next().expect("one map")),
            v => Err(Diagnostic::at(
                format!("expected an indexing map, found a {}", v.kind()),
                span,
            )),
        }
    }
}

/// The value of one argument group.
pub fn group_value(session: &mut Session, group: &ArgGroup) -> Result<Value, Diagnostic> {
    match group.items.first() {
        Some(Arg::Map(lit)) => Ok(Value::Map(super::build::build_map(lit)?)),
        Some(Arg::Command(call)) => session.call(call),
        Some(Arg::Word(w, span)) => {
            if let Some(v) = session.values.get(w) {
                return Ok(v.clone());
            }
            if super::commands::find(w).is_some() {
                let call = CommandCall {
                    name: w.clone(),
                    name_span: *span,
                    groups: if group.items.len() > 1 {
                        vec![ArgGroup {
                            items: group.items[1..].to_vec(),
                            span: group.span,
                        }]
                    } else {
                        vec![]
                    },
                    span: group.span,
                };
                return session.call(&call);
            }
            Err(session.unknown_name(w, *span))
        }
        Some(a) => Err(Diagnostic::at(
            "expected a map, a name or a command",
            a.span(),
        )),
        None => Err(Diagnostic::at("missing argument", group.span)),
    }
}
