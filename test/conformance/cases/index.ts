import type { ConformanceCase } from '../case.js';
import { cases as actors } from './actors.js';
import { cases as charts } from './charts.js';
import { cases as defects } from './defects.js';
import { cases as delays } from './delays.js';
import { cases as order } from './order.js';

/** Every conformance case, from every file in this folder. */
export const allCases: readonly ConformanceCase[] = [...defects, ...delays, ...actors, ...charts, ...order];
