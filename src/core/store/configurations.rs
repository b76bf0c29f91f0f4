//! The configurations a store's keys use, each held once with its version, so a slot names
//! one with a 4-byte id. An entry lives while a key or the store's default uses it.

use std::collections::HashMap;

use foldhash::fast::FixedState;

use super::super::configuration::BucketConfiguration;

#[derive(Debug)]
struct Entry {
    configuration: BucketConfiguration,
    version: u64,
    users: u32,
}

#[derive(Debug, Default)]
pub(crate) struct Configurations {
    entries: Vec<Option<Entry>>,
    ids: HashMap<(BucketConfiguration, u64), u32, FixedState>,
    free: Vec<u32>,
}

impl Configurations {
    /// The id of (`configuration`, `version`), with one more user.
    pub(crate) fn acquire(&mut self, configuration: &BucketConfiguration, version: u64) -> u32 {
        let id = match self.ids.get(&(configuration.clone(), version)) {
            Some(&id) => id,
            None => self.add(configuration.clone(), version),
        };
        self.entry_mut(id).users += 1;
        id
    }

    /// One more user of an entry already held.
    pub(crate) fn retain(&mut self, id: u32) {
        self.entry_mut(id).users += 1;
    }

    /// One user fewer; the entry goes when it has none.
    pub(crate) fn release(&mut self, id: u32) {
        let entry = self.entry_mut(id);
        entry.users -= 1;
        if entry.users == 0 {
            let Entry { configuration, version, .. } = self.entries[id as usize].take().expect("held");
            self.ids.remove(&(configuration, version));
            self.free.push(id);
        }
    }

    #[inline]
    pub(crate) fn get(&self, id: u32) -> (&BucketConfiguration, u64) {
        let entry = self.entries[id as usize].as_ref().expect("a slot's configuration is held");
        (&entry.configuration, entry.version)
    }

    /// Entries held (for tests).
    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        self.ids.len()
    }

    fn add(&mut self, configuration: BucketConfiguration, version: u64) -> u32 {
        let entry = Entry { configuration: configuration.clone(), version, users: 0 };
        let id = match self.free.pop() {
            Some(id) => {
                self.entries[id as usize] = Some(entry);
                id
            }
            None => {
                self.entries.push(Some(entry));
                self.entries.len() as u32 - 1
            }
        };
        self.ids.insert((configuration, version), id);
        id
    }

    fn entry_mut(&mut self, id: u32) -> &mut Entry {
        self.entries[id as usize].as_mut().expect("a slot's configuration is held")
    }
}
