/** Byte lengths of strings as UTF-8, for limits stated in bytes (no Buffer: the protocol also runs in browsers). */
/** UTF-8 length of a string without encoding it (lone surrogates count as the 3 bytes of U+FFFD, as TextEncoder writes them). */
export function utf8Length(s: string): number {
  let n = 0;
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (c < 0x80) n += 1;
    else if (c < 0x800) n += 2;
    else if (c >= 0xd800 && c <= 0xdbff && i + 1 < s.length && (s.charCodeAt(i + 1) & 0xfc00) === 0xdc00) {
      n += 4;
      i++;
    } else n += 3;
  }
  return n;
}
