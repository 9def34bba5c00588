//! Typed requests and responses of the SOAP contract (`wsdl/ardacat.wsdl`).
//!
//! These types mirror the WSDL's XSD one to one. They carry strings exactly as they travel
//! (after XML decoding); interpreting them (paths, conditions, SQL types) is the catalogue's job.

use std::fmt;

/// The contract's target namespace (`tns`).
pub const NAMESPACE: &str = "urn:ardacat:metadata:1";

/// One operation of the `MetadataCatalogPortType`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Operation {
    Ping,
    GetVersion,
    CreateSchema,
    DropSchema,
    AddSchemaAttributes,
    RemoveSchemaAttributes,
    ListSchemas,
    DescribeSchema,
    CreateEntry,
    RemoveEntry,
    SetAttributes,
    GetAttributes,
    ClearAttributes,
    ListAttributes,
    Query,
    NextQuery,
    EndQuery,
    IndexCreate,
    IndexRemove,
    IndexList,
}

macro_rules! operation_table {
    ($( $variant:ident => $name:literal, $resp:literal, $action:literal; )*) => {
        impl Operation {
            /// Every operation, in WSDL order.
            pub const ALL: &'static [Operation] = &[$(Operation::$variant),*];

            /// The request element's local name (= WSDL operation name), e.g. `getAttributes`.
            pub const fn name(self) -> &'static str {
                match self { $(Operation::$variant => $name),* }
            }

            /// The response element's local name, e.g. `getAttributesResponse`.
            pub const fn response_name(self) -> &'static str {
                match self { $(Operation::$variant => $resp),* }
            }

            /// The WSDL `soapAction`, e.g. `urn:ardacat:metadata:1#ping` (unquoted).
            pub const fn soap_action(self) -> &'static str {
                match self { $(Operation::$variant => $action),* }
            }

            /// Looks an operation up by its request element's local name (case-sensitive).
            pub fn from_name(name: &str) -> Option<Operation> {
                match name { $($name => Some(Operation::$variant),)* _ => None }
            }
        }
    };
}

operation_table! {
    Ping => "ping", "pingResponse", "urn:ardacat:metadata:1#ping";
    GetVersion => "getVersion", "getVersionResponse", "urn:ardacat:metadata:1#getVersion";
    CreateSchema => "createSchema", "createSchemaResponse", "urn:ardacat:metadata:1#createSchema";
    DropSchema => "dropSchema", "dropSchemaResponse", "urn:ardacat:metadata:1#dropSchema";
    AddSchemaAttributes => "addSchemaAttributes", "addSchemaAttributesResponse", "urn:ardacat:metadata:1#addSchemaAttributes";
    RemoveSchemaAttributes => "removeSchemaAttributes", "removeSchemaAttributesResponse", "urn:ardacat:metadata:1#removeSchemaAttributes";
    ListSchemas => "listSchemas", "listSchemasResponse", "urn:ardacat:metadata:1#listSchemas";
    DescribeSchema => "describeSchema", "describeSchemaResponse", "urn:ardacat:metadata:1#describeSchema";
    CreateEntry => "createEntry", "createEntryResponse", "urn:ardacat:metadata:1#createEntry";
    RemoveEntry => "removeEntry", "removeEntryResponse", "urn:ardacat:metadata:1#removeEntry";
    SetAttributes => "setAttributes", "setAttributesResponse", "urn:ardacat:metadata:1#setAttributes";
    GetAttributes => "getAttributes", "getAttributesResponse", "urn:ardacat:metadata:1#getAttributes";
    ClearAttributes => "clearAttributes", "clearAttributesResponse", "urn:ardacat:metadata:1#clearAttributes";
    ListAttributes => "listAttributes", "listAttributesResponse", "urn:ardacat:metadata:1#listAttributes";
    Query => "query", "queryResponse", "urn:ardacat:metadata:1#query";
    NextQuery => "nextQuery", "nextQueryResponse", "urn:ardacat:metadata:1#nextQuery";
    EndQuery => "endQuery", "endQueryResponse", "urn:ardacat:metadata:1#endQuery";
    IndexCreate => "indexCreate", "indexCreateResponse", "urn:ardacat:metadata:1#indexCreate";
    IndexRemove => "indexRemove", "indexRemoveResponse", "urn:ardacat:metadata:1#indexRemove";
    IndexList => "indexList", "indexListResponse", "urn:ardacat:metadata:1#indexList";
}

impl Operation {
    /// Looks an operation up by a SOAPAction value (HTTP `SOAPAction` header of SOAP 1.1 or the
    /// `action` parameter of a SOAP 1.2 Content-Type). Surrounding quotes and whitespace are
    /// ignored. Returns `None` for an empty or unknown action: dispatch on the body element
    /// instead (WS-I R2710 makes that unambiguous).
    pub fn from_soap_action(action: &str) -> Option<Operation> {
        let a = action.trim();
        let a = a.strip_prefix('"').and_then(|a| a.strip_suffix('"')).unwrap_or(a).trim();
        let name = a.strip_prefix(NAMESPACE)?.strip_prefix('#')?;
        Operation::from_name(name)
    }
}

impl fmt::Display for Operation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// XSD `tns:Attribute`: a metadata attribute, with an optional type and an optional value.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Attribute {
    pub name: String,
    /// `<type>`: absent → `None`.
    pub attr_type: Option<String>,
    /// `<value>`: absent or `xsi:nil="true"` → `None` (SQL NULL where values are meant).
    pub value: Option<String>,
}

impl Attribute {
    /// An attribute with just a name.
    pub fn named(name: impl Into<String>) -> Self {
        Attribute { name: name.into(), attr_type: None, value: None }
    }

    /// An attribute with a name and a type (schema definitions).
    pub fn typed(name: impl Into<String>, attr_type: impl Into<String>) -> Self {
        Attribute { name: name.into(), attr_type: Some(attr_type.into()), value: None }
    }

    /// An attribute with a name and a value (`None` = NULL).
    pub fn with_value(name: impl Into<String>, value: Option<impl Into<String>>) -> Self {
        Attribute { name: name.into(), attr_type: None, value: value.map(Into::into) }
    }
}

/// XSD `tns:Entry`: an entry name and some of its attributes.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Entry {
    pub name: String,
    pub attributes: Vec<Attribute>,
}

/// XSD `tns:Row`: one result row; `None` = `xsi:nil` (SQL NULL).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Row {
    pub values: Vec<Option<String>>,
}

/// XSD `tns:MDResult`: one page of a query result.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct MDResult {
    /// Continuation token for `nextQuery`/`endQuery`; `None` when the result is complete.
    pub token: Option<String>,
    pub columns: Vec<String>,
    pub rows: Vec<Row>,
    /// `true` when more rows can be fetched with `nextQuery(token)`.
    pub more: bool,
}

/// XSD `tns:Index`: a composite index of a collection, its columns in index order (`FILE` for
/// the entry name).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Index {
    pub name: String,
    pub attribute_names: Vec<String>,
}

/// One request, decoded from the Body's single child element.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Request {
    Ping,
    GetVersion,
    CreateSchema { schema_name: String, attributes: Vec<Attribute>, plain: bool },
    DropSchema { schema_name: String },
    AddSchemaAttributes { schema_name: String, attributes: Vec<Attribute> },
    RemoveSchemaAttributes { schema_name: String, attribute_names: Vec<String> },
    ListSchemas { path: Option<String> },
    DescribeSchema { schema_name: String },
    CreateEntry { schema_name: String, entries: Vec<Entry> },
    RemoveEntry { pattern: String, condition: Option<String> },
    SetAttributes { pattern: String, condition: Option<String>, attributes: Vec<Attribute> },
    GetAttributes { entry_names: Vec<String>, attribute_names: Vec<String> },
    ClearAttributes { pattern: String, attribute_names: Vec<String> },
    ListAttributes { entry_name: String },
    Query { select: Vec<String>, condition: Option<String>, order_by: Option<String>, page_size: Option<u32> },
    NextQuery { token: String, page_size: Option<u32> },
    EndQuery { token: String },
    IndexCreate { schema_name: String, index_name: String, attribute_names: Vec<String> },
    IndexRemove { schema_name: String, index_name: String },
    IndexList { schema_name: String },
}

impl Request {
    pub fn operation(&self) -> Operation {
        match self {
            Request::Ping => Operation::Ping,
            Request::GetVersion => Operation::GetVersion,
            Request::CreateSchema { .. } => Operation::CreateSchema,
            Request::DropSchema { .. } => Operation::DropSchema,
            Request::AddSchemaAttributes { .. } => Operation::AddSchemaAttributes,
            Request::RemoveSchemaAttributes { .. } => Operation::RemoveSchemaAttributes,
            Request::ListSchemas { .. } => Operation::ListSchemas,
            Request::DescribeSchema { .. } => Operation::DescribeSchema,
            Request::CreateEntry { .. } => Operation::CreateEntry,
            Request::RemoveEntry { .. } => Operation::RemoveEntry,
            Request::SetAttributes { .. } => Operation::SetAttributes,
            Request::GetAttributes { .. } => Operation::GetAttributes,
            Request::ClearAttributes { .. } => Operation::ClearAttributes,
            Request::ListAttributes { .. } => Operation::ListAttributes,
            Request::Query { .. } => Operation::Query,
            Request::NextQuery { .. } => Operation::NextQuery,
            Request::EndQuery { .. } => Operation::EndQuery,
            Request::IndexCreate { .. } => Operation::IndexCreate,
            Request::IndexRemove { .. } => Operation::IndexRemove,
            Request::IndexList { .. } => Operation::IndexList,
        }
    }
}

/// A SOAP header block that the parser saw and ignored (it was not addressed to us with
/// `mustUnderstand`; such a block makes parsing fail with [`crate::SoapError::MustUnderstand`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HeaderBlock {
    /// Namespace name of the block (`None` if unqualified, which WS-I forbids but we tolerate
    /// for blocks we ignore).
    pub namespace: Option<String>,
    pub local_name: String,
    /// The block's `mustUnderstand` value (it was then targeted at another actor/role).
    pub must_understand: bool,
}

/// The result of [`crate::parse_request`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ParsedRequest {
    pub request: Request,
    /// Header blocks present and ignored, in document order.
    pub headers: Vec<HeaderBlock>,
}

/// One successful response. Large list responses can also be streamed item by item with
/// [`crate::ResponseWriter`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Response {
    Ping,
    GetVersion {
        version: String,
    },
    CreateSchema,
    DropSchema,
    AddSchemaAttributes,
    RemoveSchemaAttributes,
    ListSchemas {
        schema_names: Vec<String>,
    },
    /// Attributes with `value: None` are written without a `<value>` element.
    DescribeSchema {
        attributes: Vec<Attribute>,
    },
    CreateEntry {
        created: u32,
    },
    RemoveEntry {
        removed: u32,
    },
    SetAttributes {
        updated: u32,
    },
    /// Entry attributes with `value: None` are written as `<value xsi:nil="true"/>`.
    GetAttributes {
        entries: Vec<Entry>,
    },
    ClearAttributes {
        cleared: u32,
    },
    /// Attributes with `value: None` are written without a `<value>` element.
    ListAttributes {
        attributes: Vec<Attribute>,
    },
    Query(MDResult),
    NextQuery(MDResult),
    EndQuery,
    IndexCreate,
    IndexRemove,
    IndexList {
        indexes: Vec<Index>,
    },
}

impl Response {
    pub fn operation(&self) -> Operation {
        match self {
            Response::Ping => Operation::Ping,
            Response::GetVersion { .. } => Operation::GetVersion,
            Response::CreateSchema => Operation::CreateSchema,
            Response::DropSchema => Operation::DropSchema,
            Response::AddSchemaAttributes => Operation::AddSchemaAttributes,
            Response::RemoveSchemaAttributes => Operation::RemoveSchemaAttributes,
            Response::ListSchemas { .. } => Operation::ListSchemas,
            Response::DescribeSchema { .. } => Operation::DescribeSchema,
            Response::CreateEntry { .. } => Operation::CreateEntry,
            Response::RemoveEntry { .. } => Operation::RemoveEntry,
            Response::SetAttributes { .. } => Operation::SetAttributes,
            Response::GetAttributes { .. } => Operation::GetAttributes,
            Response::ClearAttributes { .. } => Operation::ClearAttributes,
            Response::ListAttributes { .. } => Operation::ListAttributes,
            Response::Query(_) => Operation::Query,
            Response::NextQuery(_) => Operation::NextQuery,
            Response::EndQuery => Operation::EndQuery,
            Response::IndexCreate => Operation::IndexCreate,
            Response::IndexRemove => Operation::IndexRemove,
            Response::IndexList { .. } => Operation::IndexList,
        }
    }
}
