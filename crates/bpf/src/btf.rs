//! The layout of a struct as the BPF object's BTF (`.BTF` section) describes it: enough of
//! the BTF format (kernel Documentation/bpf/btf.rst) to walk its types, name a struct's
//! members and size them. Read from the object itself, never copied by hand.

use object::{Object, ObjectSection};

use crate::BpfError;

/// One member of a struct: its name, byte offset and size in bytes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Member {
    pub name: String,
    pub offset: u32,
    pub size: u32,
}

const MAGIC: u16 = 0xeb9f;

// BTF kinds (include/uapi/linux/btf.h) this reader needs by name.
const INT: u32 = 1;
const PTR: u32 = 2;
const ARRAY: u32 = 3;
const STRUCT: u32 = 4;
const UNION: u32 = 5;
const ENUM: u32 = 6;
const TYPEDEF: u32 = 8;
const VOLATILE: u32 = 9;
const CONST: u32 = 10;
const RESTRICT: u32 = 11;
const FUNC_PROTO: u32 = 13;
const VAR: u32 = 14;
const DATASEC: u32 = 15;
const DECL_TAG: u32 = 17;
const TYPE_TAG: u32 = 18;
const ENUM64: u32 = 19;

struct Type {
    name_off: u32,
    kind: u32,
    kind_flag: bool,
    /// `size` for sized kinds, the referenced type for the others.
    size_or_type: u32,
    /// Where the kind's extra data starts in the type section.
    extra: usize,
    vlen: usize,
}

struct Btf<'a> {
    types: Vec<Type>,
    type_data: &'a [u8],
    strings: &'a [u8],
}

fn u32_at(b: &[u8], at: usize) -> Result<u32, BpfError> {
    b.get(at..at + 4)
        .map(|s| u32::from_le_bytes([s[0], s[1], s[2], s[3]]))
        .ok_or_else(|| BpfError::Btf(format!("cut short at byte {at}")))
}

impl<'a> Btf<'a> {
    fn parse(data: &'a [u8]) -> Result<Self, BpfError> {
        if data.len() < 24 || u16::from_le_bytes([data[0], data[1]]) != MAGIC {
            return Err(BpfError::Btf("no BTF header (little-endian magic 0xeb9f)".into()));
        }
        let hdr_len = u32_at(data, 4)? as usize;
        let (type_off, type_len) = (u32_at(data, 8)? as usize, u32_at(data, 12)? as usize);
        let (str_off, str_len) = (u32_at(data, 16)? as usize, u32_at(data, 20)? as usize);
        let section = |off: usize, len: usize| {
            data.get(hdr_len + off..hdr_len + off + len)
                .ok_or_else(|| BpfError::Btf("a section runs past the end of .BTF".into()))
        };
        let type_data = section(type_off, type_len)?;
        let strings = section(str_off, str_len)?;
        // Type ids start at 1; id 0 is void.
        let mut types = vec![Type { name_off: 0, kind: 0, kind_flag: false, size_or_type: 0, extra: 0, vlen: 0 }];
        let mut at = 0;
        while at < type_data.len() {
            let info = u32_at(type_data, at + 4)?;
            let (kind, vlen) = ((info >> 24) & 0x1f, (info & 0xffff) as usize);
            let t = Type {
                name_off: u32_at(type_data, at)?,
                kind,
                kind_flag: info >> 31 == 1,
                size_or_type: u32_at(type_data, at + 8)?,
                extra: at + 12,
                vlen,
            };
            let extra = match kind {
                INT | VAR | DECL_TAG => 4,
                ARRAY => 12,
                STRUCT | UNION | DATASEC | ENUM64 => 12 * vlen,
                ENUM | FUNC_PROTO => 8 * vlen,
                _ => 0,
            };
            at = t.extra + extra;
            types.push(t);
        }
        Ok(Btf { types, type_data, strings })
    }

    fn name(&self, off: u32) -> String {
        let s = self.strings.get(off as usize..).unwrap_or_default();
        let end = s.iter().position(|&b| b == 0).unwrap_or(s.len());
        String::from_utf8_lossy(&s[..end]).into_owned()
    }

    fn get(&self, id: u32) -> Result<&Type, BpfError> {
        self.types.get(id as usize).ok_or_else(|| BpfError::Btf(format!("no type {id}")))
    }

    /// The size in bytes of type `id`, through typedefs and qualifiers.
    fn size(&self, id: u32) -> Result<u32, BpfError> {
        let t = self.get(id)?;
        Ok(match t.kind {
            INT | STRUCT | UNION | ENUM | ENUM64 | DATASEC => t.size_or_type,
            PTR => 8,
            ARRAY => {
                let elem = u32_at(self.type_data, t.extra)?;
                self.size(elem)? * u32_at(self.type_data, t.extra + 8)?
            }
            TYPEDEF | VOLATILE | CONST | RESTRICT | TYPE_TAG => self.size(t.size_or_type)?,
            k => return Err(BpfError::Btf(format!("type {id} (kind {k}) has no size"))),
        })
    }
}

/// The object's `.BTF` section.
fn btf_section(object: &[u8]) -> Result<&[u8], BpfError> {
    let file = object::File::parse(object).map_err(|e| BpfError::Object(e.to_string()))?;
    let section = file
        .section_by_name(".BTF")
        .ok_or_else(|| BpfError::Btf("the object has no .BTF section (compile it with clang -g)".into()))?;
    section.data().map_err(|e| BpfError::Object(e.to_string()))
}

/// The members of `struct NAME` in the object's BTF, in order.
pub fn struct_layout(object: &[u8], name: &str) -> Result<Vec<Member>, BpfError> {
    let btf = Btf::parse(btf_section(object)?)?;
    let id = btf
        .types
        .iter()
        .position(|t| t.kind == STRUCT && btf.name(t.name_off) == name)
        .ok_or_else(|| BpfError::Btf(format!("no struct {name}")))?;
    members(&btf, id as u32)
}

/// The members of the struct that type `type_id` of raw BTF data (as the kernel hands out
/// a map's BTF) is, through typedefs and qualifiers.
pub fn type_layout(raw: &[u8], type_id: u32) -> Result<Vec<Member>, BpfError> {
    members(&Btf::parse(raw)?, type_id)
}

fn members(btf: &Btf<'_>, mut id: u32) -> Result<Vec<Member>, BpfError> {
    let t = loop {
        let t = btf.get(id)?;
        match t.kind {
            TYPEDEF | VOLATILE | CONST | RESTRICT | TYPE_TAG => id = t.size_or_type,
            STRUCT => break t,
            k => return Err(BpfError::Btf(format!("type {id} is not a struct (kind {k})"))),
        }
    };
    let name = btf.name(t.name_off);
    (0..t.vlen)
        .map(|i| {
            let at = t.extra + 12 * i;
            let raw = u32_at(btf.type_data, at + 8)?;
            // With kind_flag the offset's high 8 bits are a bitfield's size.
            let bits = if t.kind_flag { raw & 0x00ff_ffff } else { raw };
            if bits % 8 != 0 {
                return Err(BpfError::Btf(format!("struct {name}: a bitfield member is not read")));
            }
            Ok(Member {
                name: btf.name(u32_at(btf.type_data, at)?),
                offset: bits / 8,
                size: btf.size(u32_at(btf.type_data, at + 4)?)?,
            })
        })
        .collect()
}
