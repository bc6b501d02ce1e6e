//! The iterator of a query's messages.

use std::collections::VecDeque;

use super::{Filter, IndexedReader, Plan};
use crate::error::Result;
use crate::io::ReadAt;
use crate::linear::{Item, LinearReader, Message};

/// Messages of a query, chunk cluster by chunk cluster (chunks whose time ranges overlap are
/// merged so the output stays in log-time order).
pub struct MessageStream<'a, R> {
    pub(super) reader: &'a IndexedReader<R>,
    pub(super) filter: Filter,
    pub(super) plans: VecDeque<Plan>,
    pub(super) buf: VecDeque<Message>,
    pub(super) linear: Option<LinearReader<&'a R>>,
    pub(super) warnings: Vec<String>,
    pub(super) chunks_read: u64,
}

impl<R: ReadAt> MessageStream<'_, R> {
    /// Warnings so far (fields lost, orphan records, ...); drained.
    pub fn take_warnings(&mut self) -> Vec<String> {
        std::mem::take(&mut self.warnings)
    }
    pub fn chunks_read(&self) -> u64 {
        self.chunks_read
    }
    /// Chunks still to visit.
    pub fn chunks_left(&self) -> usize {
        self.plans.len()
    }

    fn fill(&mut self) -> Result<bool> {
        let Some(first) = self.plans.pop_front() else {
            return Ok(false);
        };
        let mut cluster = vec![first];
        let mut end = cluster[0].chunk.message_end_time;
        let mut bytes = cluster[0].chunk.uncompressed_size;
        while let Some(p) = self.plans.front() {
            if p.chunk.message_start_time > end {
                break;
            }
            bytes = bytes.saturating_add(p.chunk.uncompressed_size);
            if bytes > self.reader.opts.max_cluster_bytes {
                self.warnings.push("overlapping chunks exceed the merge budget; messages are ordered per chunk only".into());
                break;
            }
            end = end.max(p.chunk.message_end_time);
            cluster.push(self.plans.pop_front().expect("front exists"));
        }
        let mut all: Vec<(u64, u64, Message)> = Vec::new();
        for p in cluster {
            self.chunks_read += 1;
            let msgs = match (&p.field_offsets, &p.offsets) {
                (Some(o), _) | (None, Some(o)) => {
                    self.reader
                        .read_at_offsets(&p.chunk, o, &mut self.warnings)?
                }
                (None, None) => self.reader.full_scan(&p.chunk, &mut self.warnings)?,
            };
            all.extend(
                msgs.into_iter()
                    .filter(|(_, m)| self.filter.matches(m))
                    .map(|(o, m)| (p.chunk.chunk_start_offset, o, m)),
            );
        }
        all.sort_by_key(|(c, o, m)| (m.log_time, *c, *o));
        self.buf.extend(all.into_iter().map(|(_, _, m)| m));
        Ok(true)
    }
}

impl<R: ReadAt> Iterator for MessageStream<'_, R> {
    type Item = Result<Message>;
    fn next(&mut self) -> Option<Self::Item> {
        if let Some(lin) = self.linear.as_mut() {
            loop {
                match lin.next()? {
                    Ok(Item::Message(m)) if self.filter.matches(&m) => return Some(Ok(m)),
                    Ok(Item::Warning(w)) => self.warnings.push(w),
                    Ok(_) => {}
                    Err(e) => return Some(Err(e)),
                }
            }
        }
        loop {
            if let Some(m) = self.buf.pop_front() {
                return Some(Ok(m));
            }
            match self.fill() {
                Ok(true) => {}
                Ok(false) => return None,
                Err(e) => {
                    self.plans.clear();
                    return Some(Err(e));
                }
            }
        }
    }
}
