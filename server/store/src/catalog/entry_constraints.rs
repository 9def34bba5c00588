//! Constraints on entries (not null, unique, reference, check): their rows and DDL. Must not
//! judge entries itself (the database enforces); SQL text comes from `sql::constraint_rows`
//! (rows) and `sql::constraints` (DDL).

use super::*;

/// A constraint row (`constraint_rows::CONSTRAINT_COLS`) → its definition and its stored check SQL.
fn constraint_from(r: &[Value]) -> Result<(ConstraintDef, Option<String>)> {
    let attr = int_of(&r[4]);
    let rule = match text_of(&r[3]).as_str() {
        "not_null" => ConstraintRule::NotNull { attr },
        "unique" => ConstraintRule::Unique { attr },
        "reference" => ConstraintRule::Reference {
            attr,
            collection: int_of(&r[5]),
            column: match r[6] {
                Value::Int(a) => IndexColumn::Attr(a),
                _ => IndexColumn::File,
            },
        },
        "check" => ConstraintRule::Check { condition: text_of(&r[7]) },
        other => return Err(Error::Internal(format!("unknown constraint kind {other}"))),
    };
    let def = ConstraintDef { id: int_of(&r[0]), collection_id: int_of(&r[1]), name: text_of(&r[2]), rule };
    Ok((def, r[8].to_wire()))
}

impl SqlConn {
    /// The constraints of a collection with their stored check SQL, by name.
    pub(super) async fn load_constraints(
        &mut self,
        collection_id: i64,
    ) -> Result<Vec<(ConstraintDef, Option<String>)>> {
        let rows = self.rows_compiled(&constraint_rows::select_constraints(self.dialect, collection_id)).await?;
        let mut out = rows.iter().map(|r| constraint_from(r)).collect::<Result<Vec<_>>>()?;
        // By name in byte order on both backends, as indexes.
        out.sort_by_cached_key(|(k, _)| k.name.to_ascii_lowercase());
        Ok(out)
    }

    pub(super) async fn run_ddl(&mut self, statements: Vec<String>) -> Result<()> {
        for s in statements {
            self.batch(&s).await?;
        }
        Ok(())
    }

    /// Names of the constraints of other collections that refer to `collection_id` (with
    /// `column`, only those referring to that column), as `<name> of <path>`.
    pub(super) async fn references_to(&mut self, collection_id: i64, column: Option<i64>) -> Result<Vec<String>> {
        let rows =
            self.rows_compiled(&constraint_rows::select_references_to(self.dialect, collection_id, column)).await?;
        Ok(rows.iter().map(|r| format!("{} of {}", text_of(&r[0]), text_of(&r[1]))).collect())
    }

    /// Drops the database side of every constraint of a collection and their rows.
    pub(super) async fn delete_constraints(&mut self, collection_id: i64, has_table: bool) -> Result<()> {
        for (k, _) in self.load_constraints(collection_id).await? {
            let ddl = constraints::drop_ddl(self.dialect, &k, has_table);
            self.run_ddl(ddl).await?;
        }
        for delete in constraint_rows::delete_collection_constraints(self.dialect, collection_id) {
            self.exec_compiled(&delete).await?;
        }
        Ok(())
    }

    pub(super) async fn constraints(&mut self, collection_id: i64) -> Result<Vec<ConstraintDef>> {
        Ok(self.load_constraints(collection_id).await?.into_iter().map(|(k, _)| k).collect())
    }

    pub(super) async fn constraint_by_id(&mut self, id: i64) -> Result<Option<ConstraintDef>> {
        let rows = self.rows_compiled(&constraint_rows::select_constraint(self.dialect, id)).await?;
        rows.first().map(|r| constraint_from(r).map(|(k, _)| k)).transpose()
    }

    pub(super) async fn add_constraint(
        &mut self,
        collection_id: i64,
        name: &str,
        rule: &ConstraintRule,
        check: Option<&Expr<Term>>,
        uses: &[i64],
    ) -> Result<ConstraintDef> {
        self.writing()?;
        // Constraint definitions are not cached: nothing to invalidate.
        let mut has_table = self.lock_table_state(collection_id).await?;
        if let ConstraintRule::Reference { collection, .. } = rule {
            // Both tables must exist for a foreign key (PostgreSQL) or triggers that look into
            // the other table (SQLite); an empty table costs little.
            self.create_table_once(*collection).await?;
            if !has_table {
                self.create_table_once(collection_id).await?;
                has_table = true;
            }
        }
        // The attributes were looked up before the lock; a concurrent removeattr may have won.
        for &a in uses {
            let rows = self.rows_compiled(&attribute_sql::select_attribute_id(self.dialect, a)).await?;
            if rows.is_empty() {
                return Err(Error::NoSuchAttribute(format!("attribute #{a} was removed meanwhile")));
            }
        }
        let (stored_sql, probe_sql) = match check {
            Some(e) => {
                let qualifier = match self.dialect {
                    Dialect::Sqlite => "NEW",
                    Dialect::Postgres => "",
                };
                let unwritable =
                    || Error::IllegalQuery("a value of the condition cannot be part of a constraint".into());
                let stored = compile_condition(self.dialect, e, qualifier).ok_or_else(unwritable)?;
                let probe = compile_condition(self.dialect, e, &table_name(collection_id)).ok_or_else(unwritable)?;
                (Some(stored), Some(probe))
            }
            None => (None, None),
        };
        let (attribute_id, ref_collection_id, ref_attribute_id, condition) = match rule {
            ConstraintRule::NotNull { attr } | ConstraintRule::Unique { attr } => {
                (Value::Int(*attr), Value::Null, Value::Null, Value::Null)
            }
            ConstraintRule::Reference { attr, collection, column } => (
                Value::Int(*attr),
                Value::Int(*collection),
                match column {
                    IndexColumn::File => Value::Null,
                    IndexColumn::Attr(a) => Value::Int(*a),
                },
                Value::Null,
            ),
            ConstraintRule::Check { condition } => {
                (Value::Null, Value::Null, Value::Null, Value::Text(condition.clone()))
            }
        };
        let row = constraint_rows::ConstraintRow {
            kind: rule.kind().into(),
            attribute_id,
            ref_collection_id,
            ref_attribute_id,
            condition,
            check_sql: stored_sql.clone().map_or(Value::Null, Value::Text),
        };
        let insert =
            constraint_rows::insert_constraint(self.dialect, collection_id, name, &name.to_ascii_lowercase(), row);
        let id = match self.rows_compiled(&insert).await {
            Ok(rows) => rows
                .first()
                .and_then(|r| r.first())
                .map(int_of)
                .ok_or_else(|| Error::Internal("no constraint id".into()))?,
            Err(Error::Exists(_)) => return Err(Error::Exists(format!("constraint {name}"))),
            Err(e) => return Err(e),
        };
        for &a in uses {
            self.exec_compiled(&constraint_rows::insert_constraint_column(self.dialect, id, a)).await?;
        }
        let def = ConstraintDef { id, collection_id, name: name.into(), rule: rule.clone() };
        if has_table {
            // PostgreSQL checks the existing rows when the constraint is added; SQLite's
            // triggers only see new writes, so the rows are checked first.
            if self.dialect == Dialect::Sqlite {
                let probe = constraints::violation_probe(&def, probe_sql.as_deref());
                if !self.rows(&probe, &[], &[ValueType::Int]).await?.is_empty() {
                    return Err(Error::ConstraintViolation { id, text: String::new() });
                }
            }
            let ddl = constraints::create_ddl(self.dialect, &def, stored_sql.as_deref());
            self.run_ddl(ddl).await?;
        }
        Ok(def)
    }

    pub(super) async fn remove_constraint(&mut self, k: &ConstraintDef) -> Result<()> {
        self.writing()?;
        if let ConstraintRule::Unique { attr } = k.rule {
            let users = self.references_to(k.collection_id, Some(attr)).await?;
            if !users.is_empty() {
                return Err(Error::IllegalCommand(format!(
                    "constraint {} is relied on by reference {}; drop that first",
                    k.name,
                    users.join(", ")
                )));
            }
        }
        let has_table = self.lock_table_state(k.collection_id).await?;
        let ddl = constraints::drop_ddl(self.dialect, k, has_table);
        self.run_ddl(ddl).await?;
        let [columns, row] = constraint_rows::delete_constraint(self.dialect, k.id);
        self.exec_compiled(&columns).await?;
        let n = self.exec_compiled(&row).await?;
        if n == 0 {
            return Err(Error::NotFound(format!("constraint {}", k.name)));
        }
        Ok(())
    }
}
