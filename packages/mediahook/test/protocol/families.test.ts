/** The family table and what is derived from it: the media rule and the flag check. */
import { describe, expect, it } from 'vitest';
import {
  classifyPartName,
  FAMILIES,
  FAMILY_PARTS,
  familiesCarrying,
  familyMediaProblem,
  isFamily,
  partsOf,
} from '../../src/protocol/index.ts';

describe('the callback families', () => {
  it('begin with A and B, with the parts of the specification', () => {
    expect(FAMILIES.slice(0, 2)).toEqual(['A', 'B']);
    expect(partsOf('A', 'success')).toEqual(['status', 'id_gen', 'time_gen', 'result_pv']);
    expect(partsOf('B', 'error')).toEqual(['status', 'id_gen', 'time_gen', 'img_message']);
  });

  it('give every part name to one family and role only', () => {
    const names = FAMILIES.flatMap((family) => [FAMILY_PARTS[family].result, FAMILY_PARTS[family].error]);
    expect(new Set(names).size).toBe(names.length);
    for (const family of FAMILIES) {
      expect(classifyPartName(FAMILY_PARTS[family].result)).toEqual({ role: 'result', family });
      expect(classifyPartName(FAMILY_PARTS[family].error)).toEqual({ role: 'error', family });
    }
  });

  it('say which family carries which media type, and why not', () => {
    expect(familiesCarrying('image/jpeg')).toEqual(expect.arrayContaining(['A', 'B']));
    expect(familiesCarrying('video/mp4')).toContain('A');
    expect(familiesCarrying('video/mp4')).not.toContain('B');
    expect(familyMediaProblem('A', 'video/mp4')).toBeUndefined();
    expect(familyMediaProblem('B', 'image/jpeg')).toBeUndefined();
    expect(familyMediaProblem('B', 'video/mp4')).toBe('family B carries JPEG images only');
  });

  it('tell a family name from any other text, case included', () => {
    expect(isFamily('A')).toBe(true);
    expect(isFamily('b')).toBe(false);
    expect(isFamily('Z')).toBe(false);
    expect(FAMILIES.every(isFamily)).toBe(true);
    expect(isFamily('toString')).toBe(false);
    expect(isFamily(undefined)).toBe(false);
  });
});
