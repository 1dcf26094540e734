import type { ParameterType } from '@hearth/protocol';

const TRUE_WORDS = new Set(['true', 't', 'yes', 'y', 'on', '1']);
const FALSE_WORDS = new Set(['false', 'f', 'no', 'n', 'off', '0']);

/** Why a value does not fit a parameter type, or null when it does. */
export function typeMismatch(type: ParameterType, value: unknown): string | null {
  if (value === null || value === undefined) return null;
  switch (type) {
    case 'String':
      return ['string', 'number', 'boolean'].includes(typeof value) ? null : 'a String must be a string, number or boolean';
    case 'Number':
      if (typeof value === 'number' && Number.isFinite(value)) return null;
      if (typeof value === 'string' && value.trim() !== '' && Number.isFinite(Number(value))) return null;
      return 'a Number must be a number or a numeric string';
    case 'Boolean':
      if (typeof value === 'boolean' || value === 0 || value === 1) return null;
      if (typeof value === 'string' && (TRUE_WORDS.has(value.toLowerCase()) || FALSE_WORDS.has(value.toLowerCase()))) {
        return null;
      }
      return 'a Boolean must be true/false (or yes/no, on/off, 1/0)';
    case 'CommaDelimitedList':
      if (typeof value === 'string') return null;
      if (Array.isArray(value) && value.every((v) => ['string', 'number', 'boolean'].includes(typeof v))) return null;
      return 'a CommaDelimitedList must be a string of comma-separated items or a list of scalars';
    case 'Json':
      if (typeof value === 'object') return null;
      if (typeof value === 'string') {
        try {
          JSON.parse(value);
          return null;
        } catch {
          return 'a Json value given as a string must parse as JSON';
        }
      }
      return 'a Json value must be an object, a list or a JSON string';
  }
}
