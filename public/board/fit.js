// Every bed on one screen: the grid's columns and card height are chosen to fit the space left
// below the bar, so a 40-bed ward fits a 1920×1080 corridor screen and 24 beds a 1280×800 tablet.

const GAP = 8 // px, as .rooms's gap in board.css
const IDEAL_RATIO = 1.5 // a card about half again as wide as high reads best
const CARD_H = 190 // px: the card height the type is designed for (scale 1)
const CARD_W = 250 // px: and its width

/** The columns that give the largest cards of about the ideal shape, for `count` cards in width × height. */
export function bestColumns(count, width, height) {
  let best = { columns: 1, size: 0, cardHeight: height, cardWidth: width }
  for (let columns = 1; columns <= Math.max(1, count); columns++) {
    const rows = Math.ceil(count / columns)
    const cardWidth = (width - GAP * (columns - 1)) / columns
    const cardHeight = (height - GAP * (rows - 1)) / rows
    const size = Math.min(cardWidth / IDEAL_RATIO, cardHeight)
    if (size > best.size) best = { columns, size, cardHeight, cardWidth }
  }
  return best
}

/** Sets the grid of `container` (the .rooms element) to fit the viewport below its top. */
export function fitBeds(container, count) {
  const top = container.getBoundingClientRect().top + window.scrollY
  // main's bottom padding, and a pixel for the fractions of the bar's height.
  const bottomPad = 14
  const height = Math.max(120, Math.floor(window.innerHeight - top - bottomPad))
  const width = container.clientWidth
  const { columns, cardHeight, cardWidth } = bestColumns(count, width, height)
  // Not taller than designed: a small ward keeps readable cards instead of giant ones.
  const card = Math.min(Math.floor(cardHeight), CARD_H * 1.4)
  const scale = Math.max(0.55, Math.min(1.3, card / CARD_H, cardWidth / CARD_W))
  container.style.setProperty('--columns', String(columns))
  container.style.setProperty('--card-height', `${card}px`)
  container.style.setProperty('--scale', scale.toFixed(3))
}
