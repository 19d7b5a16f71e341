use super::machine::{long_from_le, V};
use super::*;

/// `pickle.dumps({'a': [1, -2, 3.5, None, True], 'b': ('x', b'\x00\xff', 2**70), 's': {1, 2}, 'f': frozenset(),
/// 'o': collections.OrderedDict([('k', 'v')])}, protocol=2)`
const P2: &[u8] = b"\x80\x02}q\x00(X\x01\x00\x00\x00aq\x01]q\x02(K\x01J\xfe\xff\xff\xffG@\x0c\x00\x00\x00\x00\x00\x00N\x88eX\x01\x00\x00\x00bq\x03X\x01\x00\x00\x00xq\x04c_codecs\nencode\nq\x05X\x03\x00\x00\x00\x00\xc3\xbfq\x06X\x06\x00\x00\x00latin1q\x07\x86q\x08Rq\x09\x8a\x09\x00\x00\x00\x00\x00\x00\x00\x00@\x87q\nX\x01\x00\x00\x00sq\x0bc__builtin__\nset\nq\x0c]q\x0d(K\x01K\x02e\x85q\x0eRq\x0fX\x01\x00\x00\x00fq\x10c__builtin__\nfrozenset\nq\x11]q\x12\x85q\x13Rq\x14X\x01\x00\x00\x00oq\x15ccollections\nOrderedDict\nq\x16)Rq\x17X\x01\x00\x00\x00kq\x18X\x01\x00\x00\x00vq\x19su.";

/// The same object with protocol 4 (FRAME, MEMOIZE, SHORT_BINUNICODE, SHORT_BINBYTES, EMPTY_SET, ADDITEMS,
/// FROZENSET, STACK_GLOBAL).
const P4: &[u8] = b"\x80\x04\x95z\x00\x00\x00\x00\x00\x00\x00}\x94(\x8c\x01a\x94]\x94(K\x01J\xfe\xff\xff\xffG@\x0c\x00\x00\x00\x00\x00\x00N\x88e\x8c\x01b\x94\x8c\x01x\x94C\x02\x00\xff\x94\x8a\x09\x00\x00\x00\x00\x00\x00\x00\x00@\x87\x94\x8c\x01s\x94\x8f\x94(K\x01K\x02\x90\x8c\x01f\x94(\x91\x94\x8c\x01o\x94\x8c\x0bcollections\x94\x8c\x0bOrderedDict\x94\x93\x94)R\x94\x8c\x01k\x94\x8c\x01v\x94su.";

fn check_sample(v: &Value) {
    let d = v.as_dict().expect("dict");
    assert_eq!(d.len(), 5);
    let a = v.get("a").unwrap().as_seq().unwrap();
    assert_eq!(a, &[Value::Int(1), Value::Int(-2), Value::Float(3.5), Value::None, Value::Bool(true)]);
    let b = v.get("b").unwrap();
    assert!(matches!(b, Value::Tuple(_)));
    let b = b.as_seq().unwrap();
    assert_eq!(b[0], Value::Str("x".into()));
    assert_eq!(b[1], Value::Bytes(vec![0, 255]));
    let mut big = vec![0u8; 9];
    big[8] = 0x40; // 2**70
    assert_eq!(b[2], Value::BigInt(big));
    assert_eq!(v.get("s").unwrap(), &Value::Set(vec![Value::Int(1), Value::Int(2)]));
    assert_eq!(v.get("f").unwrap(), &Value::FrozenSet(vec![]));
    assert_eq!(v.get("o").unwrap(), &Value::Dict(vec![(Value::Str("k".into()), Value::Str("v".into()))]));
}

#[test]
fn protocol2_sample() {
    check_sample(&unpickle(P2).unwrap());
}

#[test]
fn protocol4_sample() {
    check_sample(&unpickle(P4).unwrap());
}

#[test]
fn every_truncation_is_an_error() {
    for p in [P2, P4] {
        for n in 0..p.len() {
            assert!(unpickle(&p[..n]).is_err(), "prefix of {n} bytes parsed");
        }
    }
}

#[test]
fn garbage_never_panics() {
    // xorshift garbage, plus single-byte corruptions of valid pickles.
    let mut s = 0x9e37_79b9_7f4a_7c15u64;
    let mut next = move || {
        s ^= s << 13;
        s ^= s >> 7;
        s ^= s << 17;
        s
    };
    for len in [0usize, 1, 2, 5, 17, 64, 300] {
        for _ in 0..400 {
            let bytes: Vec<u8> = (0..len).map(|_| next() as u8).collect();
            let _ = unpickle(&bytes);
            let mut with_proto = vec![0x80, 2];
            with_proto.extend(&bytes);
            let _ = unpickle(&with_proto);
        }
    }
    for p in [P2, P4] {
        for i in 0..p.len() {
            for b in [0x00u8, 0xff, b'.', b'(', b'q', b'h', 0x94, b'R', b'b', b'e', b'u', next() as u8] {
                let mut c = p.to_vec();
                c[i] = b;
                let _ = unpickle(&c);
            }
        }
    }
}

#[test]
fn huge_lengths_are_rejected_without_allocating() {
    let cases: &[&[u8]] = &[
        b"\x80\x04\x8d\xff\xff\xff\xff\xff\xff\xff\xff.",
        b"\x80\x04\x8e\x00\x00\x00\x00\x00\x00\x00\x80.",
        b"\x80\x02X\xff\xff\xff\xff.",
        b"\x80\x02\x8b\xff\xff\xff\x7f.",
        b"\x80\x02\x8b\xff\xff\xff\xff.",
        b"\x80\x02T\xff\xff\xff\xff.",
    ];
    for c in cases {
        let e = unpickle(c).unwrap_err();
        assert!(e.message.contains("truncated") || e.message.contains("length"), "{e}");
    }
}

#[test]
fn memo_and_stack_abuse() {
    // BINGET of a key never stored; LONG_BINPUT at a huge index (no allocation); underflows; missing marks.
    assert!(unpickle(b"\x80\x02h\x07.").unwrap_err().message.contains("memo"));
    assert_eq!(unpickle(b"\x80\x02K\x05r\xff\xff\xff\xffj\xff\xff\xff\xff.").unwrap(), Value::Int(5));
    assert!(unpickle(b"\x80\x02.").is_err());
    assert!(unpickle(b"\x80\x02R.").is_err());
    assert!(unpickle(b"\x80\x02(K\x01\x87.").is_err(), "TUPLE3 across a mark");
    assert!(unpickle(b"\x80\x02K\x01t.").is_err(), "TUPLE without MARK");
    assert!(unpickle(b"\x80\x02K\x01K\x02s.").is_err(), "SETITEM on an int");
    assert!(unpickle(b"\x80\x02}(K\x01u.").is_err(), "odd SETITEMS");
    assert!(unpickle(b"\x80\x02K\x01}b.").is_err(), "BUILD on an int");
    assert!(unpickle(b"\x80\x06N.").is_err(), "protocol 6");
    assert!(unpickle(b"\x80\x02\xff.").unwrap_err().message.contains("unknown opcode"));
}

#[test]
fn billion_laughs_is_bounded() {
    // l0 = [0]; l(i+1) = [l(i), l(i)] ... 40 levels: 2^40 nodes if expanded naively.
    let mut p = b"\x80\x02]q\x00K\x00a".to_vec();
    for i in 0..40u8 {
        p.extend([b'(', b'h', i, b'h', i, b'l', b'q', i + 1]);
    }
    p.push(b'.');
    let t = std::time::Instant::now();
    let e = unpickle(&p).unwrap_err();
    assert!(e.message.contains("more values"), "{e}");
    assert!(t.elapsed().as_secs() < 30);
}

#[test]
fn shared_string_bomb_is_bounded() {
    // s = 'x' * 100_000 memoised once, then a list holding it 100_000 times (10 GB if copied naively).
    let mut p = b"\x80\x02]q\x00(X\xa0\x86\x01\x00".to_vec();
    p.extend(std::iter::repeat_n(b'x', 100_000));
    p.extend(b"q\x01");
    for _ in 0..100_000 {
        p.extend(b"h\x01");
    }
    p.extend(b"e.");
    let e = unpickle(&p).unwrap_err();
    assert!(e.message.contains("string bytes"), "{e}");
}

#[test]
fn shared_global_name_bomb_is_bounded() {
    // GLOBAL with a 60 KB module name memoised once, then referenced 200_000 times: global names were copied per
    // reference without being counted (12 GB from a 460 KB pickle).
    let mut p = b"\x80\x02]q\x00(c".to_vec();
    p.extend(std::iter::repeat_n(b'm', 60_000));
    p.extend(b"\nname\nq\x01");
    for _ in 0..200_000 {
        p.extend(b"h\x01");
    }
    p.extend(b"e.");
    let e = unpickle(&p).unwrap_err();
    assert!(e.message.contains("string bytes"), "{e}");
}

#[test]
fn repeated_fold_copies_are_bounded() {
    // a = ([0] * 200_000,); then set(*a) 20_000 times: each fold copies the list (4e9 element copies).
    let mut p = b"\x80\x02c__builtin__\nset\nq\x00](".to_vec();
    for _ in 0..200_000 {
        p.extend(b"K\x00");
    }
    p.extend(b"e\x85q\x01");
    for _ in 0..20_000 {
        p.extend(b"h\x00h\x01R0");
    }
    p.extend(b"N.");
    let e = unpickle(&p).unwrap_err();
    assert!(e.message.contains("copies too much"), "{e}");
    // while ordinary REDUCEs share their argument tuple and cost nothing extra
    let mut p = b"\x80\x02c__main__\nf\nq\x00](".to_vec();
    for _ in 0..200_000 {
        p.extend(b"K\x00");
    }
    p.extend(b"e\x85q\x01");
    for _ in 0..20_000 {
        p.extend(b"h\x00h\x01R0");
    }
    p.extend(b"N.");
    assert_eq!(unpickle(&p).unwrap(), Value::None);
}

#[test]
fn deep_nesting_is_bounded() {
    let mut p = b"\x80\x02".to_vec();
    p.extend(std::iter::repeat_n(b']', 100_000));
    p.extend(std::iter::repeat_n(b'a', 99_999));
    p.push(b'.');
    let e = unpickle(&p).unwrap_err();
    assert!(e.message.contains("deeper"), "{e}");
}

#[test]
fn cycles_become_recursive() {
    // l = []; l.append(l)
    let v = unpickle(b"\x80\x02]q\x00h\x00a.").unwrap();
    assert_eq!(v, Value::List(vec![Value::Recursive]));
}

#[test]
fn shared_reference_sees_later_mutation() {
    // d = {}; memoised before SETITEMS; the tuple (d, d) must show both filled.
    let v = unpickle(b"\x80\x02}q\x00(X\x01\x00\x00\x00kK\x07uh\x00\x86.").unwrap();
    let t = v.as_seq().unwrap();
    assert_eq!(t[0], t[1]);
    assert_eq!(t[1].get("k"), Some(&Value::Int(7)));
}

#[test]
fn objects_are_recorded_not_executed() {
    // os.system('x') via REDUCE; a NEWOBJ + BUILD instance.
    let v = unpickle(b"\x80\x02cposix\nsystem\nX\x01\x00\x00\x00x\x85R.").unwrap();
    let o = v.as_object().unwrap();
    assert!(o.class.is_global("posix", "system"));
    assert_eq!(o.args, vec![Value::Str("x".into())]);
    let v = unpickle(b"\x80\x02c__main__\nFoo\n)\x81}X\x01\x00\x00\x00aK\x01sb.").unwrap();
    let o = v.as_object().unwrap();
    assert!(o.class.is_global("__main__", "Foo"));
    assert_eq!(o.state.as_ref().unwrap().get("a"), Some(&Value::Int(1)));
    assert_eq!(v.type_name(), "object __main__.Foo");
}

#[test]
fn long_decoding() {
    assert!(matches!(long_from_le(&[]), V::Int(0)));
    assert!(matches!(long_from_le(&[0xff]), V::Int(-1)));
    assert!(matches!(long_from_le(&[0x80, 0x00]), V::Int(128)));
    assert!(matches!(long_from_le(&[0xff; 12]), V::Int(-1)));
    let mut m = [0u8; 9];
    m[7] = 0x80; // 2**63 (needs the 9th byte 0x00 as sign)
    assert!(matches!(long_from_le(&m), V::BigInt(_)));
    let mut m = [0u8; 8];
    m[7] = 0x80; // -2**63
    assert!(matches!(long_from_le(&m), V::Int(i64::MIN)));
}
