//! The display texts of one trace, as stored at its import.

use super::format::{damaged, ABSENT};
use super::table::TextTable;
use crate::error::StorageError;
use crate::records::VarRecord;

/// A trace's display texts: per variable its full node id, category and class,
/// per op its id, name and kind (`category`), by local id.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TraceTexts {
    /// Full node id (`class:name@version`), category.
    pub vars: TextTable<2>,
    /// Op id, name, kind.
    pub ops: TextTable<3>,
    /// Each variable's class (`class_name` as recorded), with which its
    /// name, class and version are read from its full node id (see
    /// [`var`](Self::var)); `None` for texts stored before classes were.
    pub classes: Option<TextTable<1>>,
}

impl Default for TraceTexts {
    /// No records yet, classes kept.
    fn default() -> Self {
        TraceTexts {
            vars: TextTable::default(),
            ops: TextTable::default(),
            classes: Some(TextTable::default()),
        }
    }
}

/// The first bytes of a stored [`TraceTexts`] value with classes.
const MAGIC: &[u8; 4] = b"MTL2";

/// The first bytes of a stored [`TraceTexts`] value without classes (as
/// stored before classes were).
const MAGIC_NO_CLASSES: &[u8; 4] = b"MTL1";

/// A variable's display fields, read from its full node id and its class
/// (see [`TraceTexts::var`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct VarText<'a> {
    /// `class:name@version` (`name@version` without a class).
    pub node_id: &'a str,
    /// `node_id` without `@version`.
    pub full_name: &'a str,
    /// The name.
    pub name: &'a str,
    /// The class as recorded (possibly empty).
    pub class: Option<&'a str>,
    /// The version.
    pub version: u32,
    /// The category.
    pub category: Option<&'a str>,
}

impl<'a> VarText<'a> {
    /// Splits a full node id by its class: `None` when the id is not
    /// `class:name@version` (or `name@version` for no or an empty class)
    /// with a version that prints back as written.
    pub fn split(
        node_id: &'a str,
        class: Option<&'a str>,
        category: Option<&'a str>,
    ) -> Option<Self> {
        let at = node_id.rfind('@')?;
        let (full_name, version) = (&node_id[..at], &node_id[at + 1..]);
        let parsed: u32 = version.parse().ok()?;
        // `parse` takes a leading `+` and zeros, which no id is written with.
        if version.starts_with('+') || (version.len() > 1 && version.starts_with('0')) {
            return None;
        }
        let name = match class.filter(|c| !c.is_empty()) {
            Some(c) => full_name.strip_prefix(c)?.strip_prefix(':')?,
            None => full_name,
        };
        Some(VarText {
            node_id,
            full_name,
            name,
            class,
            version: parsed,
            category,
        })
    }
}

impl TraceTexts {
    /// Appends a variable's texts (full node id, made in `scratch`,
    /// category and, when kept, class); `false` (and nothing appended)
    /// when a kind's texts would reach 2 GiB.
    pub fn push_variable(&mut self, v: &VarRecord, scratch: &mut String) -> bool {
        if let Some(c) = &self.classes {
            // A class is part of its full node id, so its texts stay
            // shorter than the ids': checked first, nothing to undo.
            if c.text(0).len() + v.class_name.as_deref().map_or(0, str::len) >= ABSENT as usize {
                return false;
            }
        }
        if !self.vars.push_variable(v, scratch) {
            return false;
        }
        if let Some(c) = &mut self.classes {
            c.push([v.class_name.as_deref()]);
        }
        true
    }

    /// Variable `v`'s full node id split into name, class and version, with
    /// its category; `None` past the last variable, for texts without
    /// classes, or for an id its class does not split (never so for texts
    /// made by [`push_variable`](Self::push_variable)).
    pub fn var(&self, v: u32) -> Option<VarText<'_>> {
        let [class] = self.classes.as_ref()?.get(v)?;
        let [id, category] = self.vars.get(v)?;
        VarText::split(id?, class, category)
    }

    /// Frees what the tables hold beyond their texts.
    pub fn shrink_to_fit(&mut self) {
        self.vars.shrink_to_fit();
        self.ops.shrink_to_fit();
        if let Some(c) = &mut self.classes {
            c.shrink_to_fit();
        }
    }

    /// The stored form.
    pub fn encode(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(16 + self.bytes());
        out.extend_from_slice(match self.classes {
            Some(_) => MAGIC,
            None => MAGIC_NO_CLASSES,
        });
        self.vars.encode(&mut out);
        self.ops.encode(&mut out);
        if let Some(c) = &self.classes {
            c.encode(&mut out);
        }
        out
    }

    /// Reads what [`encode`](Self::encode) wrote (or texts stored before
    /// classes were); anything else is an error.
    pub fn decode(bytes: &[u8]) -> Result<TraceTexts, StorageError> {
        let (with_classes, rest) = match (
            bytes.strip_prefix(MAGIC),
            bytes.strip_prefix(MAGIC_NO_CLASSES),
        ) {
            (Some(rest), _) => (true, rest),
            (None, Some(rest)) => (false, rest),
            (None, None) => return Err(damaged("not a labels value")),
        };
        let (vars, rest) = TextTable::decode(rest)?;
        let (ops, mut rest) = TextTable::decode(rest)?;
        let classes = match with_classes {
            true => {
                let (c, after) = TextTable::<1>::decode(rest)?;
                if c.len() != vars.len() {
                    return Err(damaged(format!(
                        "{} classes for {} variables",
                        c.len(),
                        vars.len()
                    )));
                }
                rest = after;
                Some(c)
            }
            false => None,
        };
        if !rest.is_empty() {
            return Err(damaged(format!("{} bytes after the tables", rest.len())));
        }
        Ok(TraceTexts { vars, ops, classes })
    }

    /// Bytes held on the heap.
    pub fn bytes(&self) -> usize {
        self.vars.bytes() + self.ops.bytes() + self.classes.as_ref().map_or(0, TextTable::bytes)
    }
}
