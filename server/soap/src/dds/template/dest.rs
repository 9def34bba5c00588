//! Slot destinations: where a slot's value lives in a `Request` (`dest_mut`) and the recording
//! pass's check that a value is there. Must not convert or judge values beyond the full parser's
//! own conversions.

use super::*;

/// A mutable view of one destination in a request.
pub(crate) enum DestMut<'a> {
    Str(&'a mut String),
    OptStr(&'a mut Option<String>),
    Bool(&'a mut bool),
    OptU32(&'a mut Option<u32>),
}

/// The destination `(field, i, j)` in `req`, if the request has it.
pub(crate) fn dest_mut(req: &mut Request, field: Field, i: u32, j: u32) -> Option<DestMut<'_>> {
    let (i, j) = (i as usize, j as usize);
    Some(match (field, req) {
        (
            Field::SchemaName,
            Request::CreateSchema { schema_name, .. }
            | Request::DropSchema { schema_name }
            | Request::AddSchemaAttributes { schema_name, .. }
            | Request::RemoveSchemaAttributes { schema_name, .. }
            | Request::DescribeSchema { schema_name }
            | Request::CreateEntry { schema_name, .. }
            | Request::IndexCreate { schema_name, .. }
            | Request::IndexRemove { schema_name, .. }
            | Request::IndexList { schema_name },
        ) => DestMut::Str(schema_name),
        (Field::IndexName, Request::IndexCreate { index_name, .. } | Request::IndexRemove { index_name, .. }) => {
            DestMut::Str(index_name)
        }
        (
            Field::Pattern,
            Request::RemoveEntry { pattern, .. }
            | Request::SetAttributes { pattern, .. }
            | Request::ClearAttributes { pattern, .. },
        ) => DestMut::Str(pattern),
        (
            Field::Condition,
            Request::RemoveEntry { condition, .. }
            | Request::SetAttributes { condition, .. }
            | Request::Query { condition, .. },
        ) => DestMut::OptStr(condition),
        (Field::OrderBy, Request::Query { order_by, .. }) => DestMut::OptStr(order_by),
        (Field::Path, Request::ListSchemas { path }) => DestMut::OptStr(path),
        (Field::EntryName, Request::ListAttributes { entry_name }) => DestMut::Str(entry_name),
        (Field::Token, Request::NextQuery { token, .. } | Request::EndQuery { token }) => DestMut::Str(token),
        (Field::Plain, Request::CreateSchema { plain, .. }) => DestMut::Bool(plain),
        (Field::Statement, Request::SqlQuery { statement, .. }) => DestMut::Str(statement),
        (
            Field::PageSize,
            Request::Query { page_size, .. }
            | Request::NextQuery { page_size, .. }
            | Request::SqlQuery { page_size, .. },
        ) => DestMut::OptU32(page_size),
        (
            Field::AttrName | Field::AttrType | Field::AttrValue,
            Request::CreateSchema { attributes, .. }
            | Request::AddSchemaAttributes { attributes, .. }
            | Request::SetAttributes { attributes, .. },
        ) => {
            let a = attributes.get_mut(i)?;
            match field {
                Field::AttrName => DestMut::Str(&mut a.name),
                Field::AttrType => DestMut::OptStr(&mut a.attr_type),
                _ => DestMut::OptStr(&mut a.value),
            }
        }
        (Field::EntryItemName, Request::CreateEntry { entries, .. }) => DestMut::Str(&mut entries.get_mut(i)?.name),
        (Field::EntryAttrName | Field::EntryAttrType | Field::EntryAttrValue, Request::CreateEntry { entries, .. }) => {
            let a = entries.get_mut(i)?.attributes.get_mut(j)?;
            match field {
                Field::EntryAttrName => DestMut::Str(&mut a.name),
                Field::EntryAttrType => DestMut::OptStr(&mut a.attr_type),
                _ => DestMut::OptStr(&mut a.value),
            }
        }
        (Field::Select, Request::Query { select, .. }) => DestMut::Str(select.get_mut(i)?),
        (
            Field::AttributeNameAt,
            Request::RemoveSchemaAttributes { attribute_names, .. }
            | Request::GetAttributes { attribute_names, .. }
            | Request::ClearAttributes { attribute_names, .. }
            | Request::IndexCreate { attribute_names, .. },
        ) => DestMut::Str(attribute_names.get_mut(i)?),
        (Field::EntryNameAt, Request::GetAttributes { entry_names, .. }) => DestMut::Str(entry_names.get_mut(i)?),
        _ => return None,
    })
}

/// Is there a value at the slot's destination in the recorder's hollow request, and is it
/// present at all (absent/nil values get no slot)? `Some(true)`: slot; `Some(false)`: no slot
/// (nil); `None`: mismatch (recording bug, so no template). Flags and integers are compared
/// here; strings are compared when the finished template rebuilds the request.
pub(super) fn check_dest(req: &mut Request, slot: &Slot, raw: &str) -> Option<bool> {
    if slot.field() == Field::HeaderText {
        return Some(true);
    }
    let d = dest_mut(req, slot.field(), slot.i, slot.j())?;
    if slot.fragile() {
        // The value is a decoding of the raw bytes; only its presence can be checked.
        return Some(match d {
            DestMut::OptStr(o) => o.is_some(),
            DestMut::OptU32(o) => o.is_some(),
            DestMut::Str(_) | DestMut::Bool(_) => true,
        });
    }
    match d {
        DestMut::Str(_) | DestMut::OptStr(Some(_)) => Some(true),
        DestMut::OptStr(None) => Some(false),
        DestMut::Bool(b) => (parse_xsd_bool(raw)? == *b).then_some(true),
        DestMut::OptU32(None) => None,
        DestMut::OptU32(Some(v)) => (parse_xsd_unsigned_int(raw)? == *v).then_some(true),
    }
}
