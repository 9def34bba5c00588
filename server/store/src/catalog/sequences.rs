//! Per-collection sequences: create, next value, remove. Must not touch entries; SQL text
//! comes from `sql`.

use super::*;

impl SqlConn {
    pub(super) async fn create_sequence(
        &mut self,
        collection_id: i64,
        name: &str,
        increment: i64,
        start: i64,
    ) -> Result<()> {
        self.writing()?;
        let sql = format!(
            "INSERT INTO sequences (collection_id, name, increment, next_value) VALUES ({}, {}, {}, {})",
            self.p(1, ValueType::Int),
            self.p(2, ValueType::Text),
            self.p(3, ValueType::Int),
            self.p(4, ValueType::Int)
        );
        let params = [Value::Int(collection_id), Value::Text(name.into()), Value::Int(increment), Value::Int(start)];
        self.exec(&sql, &params).await.map(|_| ()).map_err(|e| match e {
            Error::Exists(_) => Error::Exists(format!("sequence {name}")),
            e => e,
        })
    }

    pub(super) async fn next_sequence(&mut self, collection_id: i64, name: &str) -> Result<Option<i64>> {
        self.writing()?;
        // SQLite turns an integer overflow into a float (which the STRICT column then refuses
        // with a message, not a code); its checked addition fails like PostgreSQL's bigint, as
        // an overflow: a sequence at the end of its range is exhausted, not broken.
        let next = match self.dialect {
            Dialect::Sqlite => "ardacat_add(next_value, increment)",
            Dialect::Postgres => "next_value + increment",
        };
        let sql = format!(
            "UPDATE sequences SET next_value = {next} WHERE collection_id = {} AND name = {} \
             RETURNING next_value - increment",
            self.p(1, ValueType::Int),
            self.p(2, ValueType::Text)
        );
        let rows = self.rows(&sql, &[Value::Int(collection_id), Value::Text(name.into())], &[ValueType::Int]).await?;
        Ok(rows.first().and_then(|r| r.first()).map(int_of))
    }

    pub(super) async fn remove_sequence(&mut self, collection_id: i64, name: &str) -> Result<bool> {
        self.writing()?;
        let sql = format!(
            "DELETE FROM sequences WHERE collection_id = {} AND name = {}",
            self.p(1, ValueType::Int),
            self.p(2, ValueType::Text)
        );
        Ok(self.exec(&sql, &[Value::Int(collection_id), Value::Text(name.into())]).await? > 0)
    }
}
