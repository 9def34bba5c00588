//! A list of attribute names as one text and where each name ends: what `getattr` is asked for.
//! Two allocations however many names (a 60-attribute `getattr` arrives on every read of a job
//! system), and two lists are compared with two `memcmp`s. Owns only the representation; what a
//! name means is the catalogue's.

use std::fmt;

/// Attribute names in order; equal lists are equal name by name (never by their joined text:
/// `a`,`b` and `ab` differ).
#[derive(Clone, Default, PartialEq, Eq, Hash)]
pub struct Names {
    text: String,
    ends: Vec<usize>,
}

impl Names {
    /// An empty list with room for `count` names of `bytes` bytes in all.
    pub fn with_capacity(count: usize, bytes: usize) -> Names {
        Names { text: String::with_capacity(bytes), ends: Vec::with_capacity(count) }
    }

    #[inline]
    pub fn push(&mut self, name: &str) {
        self.text.push_str(name);
        self.ends.push(self.text.len());
    }

    pub fn len(&self) -> usize {
        self.ends.len()
    }

    pub fn is_empty(&self) -> bool {
        self.ends.is_empty()
    }

    /// The names in order.
    pub fn iter(&self) -> impl ExactSizeIterator<Item = &str> + Clone + '_ {
        let mut start = 0;
        self.ends.iter().map(move |&end| {
            let name = &self.text[start..end];
            start = end;
            name
        })
    }
}

impl<S: AsRef<str>> FromIterator<S> for Names {
    fn from_iter<I: IntoIterator<Item = S>>(names: I) -> Names {
        let mut list = Names::default();
        for n in names {
            list.push(n.as_ref());
        }
        list
    }
}

impl<S: AsRef<str>> From<&[S]> for Names {
    /// Sized exactly: the text is one allocation of the names' total length.
    fn from(names: &[S]) -> Names {
        let mut list = Names::with_capacity(names.len(), names.iter().map(|n| n.as_ref().len()).sum());
        for n in names {
            list.push(n.as_ref());
        }
        list
    }
}

impl fmt::Debug for Names {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_list().entries(self.iter()).finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_keep_their_boundaries() {
        let ab: Names = ["a", "b"].as_slice().into();
        assert_eq!(ab.iter().collect::<Vec<_>>(), ["a", "b"]);
        assert_eq!(ab.len(), 2);
        // The same joined text is another list when the names differ.
        assert_ne!(ab, Names::from_iter(["ab"]));
        assert_ne!(ab, Names::from_iter(["a", "b", ""]));
        assert_ne!(ab, Names::from_iter(["", "a", "b"]));
        assert_ne!(ab, Names::from_iter(["b", "a"]));
        assert_eq!(ab, Names::from_iter(vec![String::from("a"), String::from("b")]));
        assert_eq!(Names::from_iter([""; 3]).iter().collect::<Vec<_>>(), ["", "", ""]);
        assert!(Names::default().is_empty());
        assert_eq!(format!("{ab:?}"), r#"["a", "b"]"#);
        let names = ["é", "x y", "FILE"];
        assert_eq!(Names::from(names.as_slice()).iter().collect::<Vec<_>>(), names);
    }
}
